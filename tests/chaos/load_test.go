package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// A training node's data loaders keep every core busy: the saturated
// variant of make chaos (BASIN_CHAOS_LOAD=N) runs N CPU-burning child
// processes of this test binary, at normal priority, for the whole run,
// so that a heal competes for the CPU as it would there.

const (
	// loadEnv is how many burners to run (0 or unset: none).
	loadEnv = "BASIN_CHAOS_LOAD"
	// burnEnv makes the test binary a burner (runBurner).
	burnEnv = "BASIN_CHAOS_BURN"
)

// burners are the running CPU burners.
type burners []*exec.Cmd

// startLoad starts the number of burners $BASIN_CHAOS_LOAD asks for
// ("nproc": one per CPU).
func startLoad() (burners, error) {
	v := os.Getenv(loadEnv)
	if v == "" || v == "0" {
		return nil, nil
	}
	n, err := strconv.Atoi(v)
	if v == "nproc" {
		n, err = runtime.NumCPU(), nil
	}
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%s=%q: want a count or nproc", loadEnv, v)
	}
	return startBurners(n)
}

// startBurners starts n burners (the soak's CPU fault: one per core).
func startBurners(n int) (burners, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var bs burners
	for range n {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), burnEnv+"=1", readerEnv+"=", writerEnv+"=", "GOMAXPROCS=1")
		// Gone with the test binary even if it is killed (timeout).
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			bs.stop()
			return nil, err
		}
		bs = append(bs, cmd)
	}
	return bs, nil
}

// stop kills the burners and waits for them.
func (bs burners) stop() {
	for _, c := range bs {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
}

// runBurner spins on one CPU until its parent goes away.
func runBurner() int {
	parent := os.Getppid()
	var x uint64
	for last := time.Now(); ; {
		for range 1 << 20 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		if now := time.Now(); now.Sub(last) > 100*time.Millisecond {
			if os.Getppid() != parent {
				return int(x & 1)
			}
			last = now
		}
	}
}
