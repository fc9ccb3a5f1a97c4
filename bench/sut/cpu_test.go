package sut

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// comm with a space and a parenthesis; utime 11, stime 22, cutime 33, cstime 44.
	st, err := parseStat("4242 (a (b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0 11 22 33 44 20 0 9 0 1000 1 1 18446744073709551615")
	if err != nil || st.ppid != 17 || st.ticks != 110 {
		t.Fatalf("= %+v, %v; want ppid 17, 110 ticks", st, err)
	}
	for _, bad := range []string{"4242 comm S 1", "1 (x) S 1 2 3", "1 (x) S x 0 0 0 0 0 0 0 0 0 0 1 1 1 1"} {
		if _, err := parseStat(bad); err == nil {
			t.Errorf("parseStat(%q) accepted", bad)
		}
	}
}

// TestProcessCPUCountsChildren: a shell that burns CPU in a child it has
// not waited for yet shows that child's time.
func TestProcessCPUCountsChildren(t *testing.T) {
	if _, err := ProcessCPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; sleep 60' & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var got time.Duration
	for range 600 { // the child's loop takes well under a second of CPU
		d, err := ProcessCPU(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if got = d; got >= 50*time.Millisecond {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got < 50*time.Millisecond {
		t.Fatalf("CPU of the shell and its busy child: %v, want >= 50ms", got)
	}
	if _, err := ProcessCPU(0); err == nil {
		t.Error("pid 0 accepted")
	}
}

func TestParseMachineStat(t *testing.T) {
	// user 100, nice 1, system 50, idle 300, iowait 40, irq 2, softirq 7, steal 5, guest 9 (in user).
	got, err := parseMachineStat("cpu  100 1 50 300 40 2 7 5 9 0\ncpu0 50 0 25 150 20 1 3 2 4 0\n")
	want := MachineTimes{Busy: 1600 * time.Millisecond, Total: 5050 * time.Millisecond}
	if err != nil || got != want {
		t.Fatalf("= %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 3", "cpu 1 2 x 4 5 6 7 8"} {
		if _, err := parseMachineStat(bad); err == nil {
			t.Errorf("parseMachineStat(%q) accepted", bad)
		}
	}
}

// TestMachineCPUMoves: the machine's busy time grows while this process
// spins, and never passes its wall-clock total.
func TestMachineCPUMoves(t *testing.T) {
	before, err := MachineCPU()
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
	}
	after, err := MachineCPU()
	if err != nil {
		t.Fatal(err)
	}
	busy, total := after.Busy-before.Busy, after.Total-before.Total
	if busy < 100*time.Millisecond || busy > total {
		t.Fatalf("busy %v of %v across a 300 ms spin", busy, total)
	}
}
