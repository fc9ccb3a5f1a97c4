//go:build k8se2e

package k8s

import (
	"bytes"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

// The faults scenario's figures.
const (
	// faultFiles small files of one line each, opened in turn.
	faultFiles = 200
	// faultPause is the longest a reader on another node may wait for
	// one open and read, in centiseconds (100 ms).
	faultPause = 10
)

// openLoop opens and reads the small files in turn, each a FUSE open
// (the mount opens in the server: openMode server), with the shell's own
// builtins only (no process started, so the loop's own cost stays far
// below the pause it measures), pacing itself by 20 ms waits on a fifo.
// It prints "slow START CS" for every open and read that took over 4
// centiseconds, "reads N" every 100 reads, and fails on a wrong line.
const openLoop = clockShell + `mkfifo /tmp/pace
echo STARTED
i=0
while [ ! -e /tmp/stop ]; do
  f=$((i % FILES))
  now; t0=$NOW
  read -r line < /data/small/$f || { echo "read $f failed"; exit 1; }
  now; t1=$NOW
  [ "$line" = "line $f" ] || { echo "file $f read as '$line'"; exit 2; }
  [ $((t1 - t0)) -le 4 ] || echo "slow $t0 $((t1 - t0))"
  i=$((i + 1))
  [ $((i % 100)) -ne 0 ] || echo "reads $i"
  read -t 0.02 _ <> /tmp/pace || true
done
echo "reads $i"`

// TestFaultsStayOnTheirNode is scenario 7 between nodes: a pod on each
// node opens and reads small files of one volume in a loop; the volume's
// FUSE process on node A is SIGKILLed. The readers on B and C see no
// open or read take over 100 ms from the kill until A's successor
// serves (nor longer than they ever took away from the kill: a busy
// machine stalls every reader now and then), and their FUSE processes
// stay the same; A's reader waits out
// the heal and goes on. All three read every file right and exit 0.
func TestFaultsStayOnTheirNode(t *testing.T) {
	scenario(t, "faults-stay-on-their-node")
	a, b, c := threeNodes(t)
	nodes := []string{a, b, c}
	ns := namespace(t, "e2e-xnode-faults")
	s := openBucket(t, "e2e-xnode-faults", true)
	for i := range faultFiles {
		body := []byte(fmt.Sprintf("line %d\n", i))
		if _, err := s.Put(t.Context(), fmt.Sprintf("small/%d", i), bytes.NewReader(body), objstore.PutOptions{Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
	}
	const handle = "e2e-xnode-faults-vol"
	staticVolume(t, ns, "e2e-xnode-faults", handle, "e2e-xnode-faults", "", "ReadOnlyMany", nil)
	script := fmt.Sprintf("FILES=%d\n", faultFiles) + openLoop
	for _, n := range nodes {
		runPod(t, ns, pod{Name: "reader-" + n, Claim: "e2e-xnode-faults", Script: script, ReadOnly: true, Node: n})
	}
	serving := map[string]int{}
	for _, n := range nodes {
		waitLog(t, ns, "reader-"+n, "reads 200", 2*time.Minute)
		serving[n] = fuseProcessOn(t, handle, n)
		if serving[n] == 0 {
			t.Fatalf("no FUSE process serves %s on %s", handle, n)
		}
	}
	t.Logf("FUSE processes: %v", serving)

	time.Sleep(3 * time.Second) // the readers' pace before the kill
	killed := uptime(t)
	if err := syscall.Kill(serving[a], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var successor int
	waitFor(t, "a successor serving on "+a, 30*time.Second, func() bool {
		successor = fuseProcessOn(t, handle, a)
		return successor != 0 && successor != serving[a]
	})
	// A's reader goes on: 100 more reads after the successor serves.
	logs0, _ := kubectlErr("-n", ns, "logs", "reader-"+a)
	reads0 := lastReads(logs0)
	waitFor(t, "the reader on "+a+" to go on", time.Minute, func() bool {
		out, _ := kubectlErr("-n", ns, "logs", "reader-"+a)
		return lastReads(out) > reads0
	})
	healed := uptime(t)
	t.Logf("killed FUSE process %d on %s; successor %d; the reader there goes on %.2fs after the kill", serving[a], a, successor, float64(healed-killed)/100)
	time.Sleep(2 * time.Second)
	// While the readers still hold the volume (a pod that ends unstages
	// it, and its FUSE process goes): B's and C's are the same processes.
	for _, n := range []string{b, c} {
		if pid := fuseProcessOn(t, handle, n); pid != serving[n] {
			t.Errorf("the FUSE process on %s changed from %d to %d", n, serving[n], pid)
		}
	}

	for _, n := range nodes {
		kubectl(t, "-n", ns, "exec", "reader-"+n, "--", "touch", "/tmp/stop")
	}
	for _, n := range nodes {
		r := mustSucceed(t, ns, "reader-"+n, time.Minute)
		// A pause beyond 100 ms counts when the reader saw none as long
		// away from the fault: on a machine whose cores are all busy,
		// every reader pauses now and then, fault or not.
		limit := func(outside int64) int64 { return max(faultPause, outside) }
		outside, during := slowReads(r.Log, killed-100, healed+200, limit)
		t.Logf("%s: %d reads; slowest open and read away from the fault %.2fs; %d over %.2fs from 1s before the kill to 2s after the heal %v",
			n, lastReads(r.Log), float64(outside)/100, len(during), float64(limit(outside))/100, during)
		switch {
		case n == a:
			if lastReads(r.Log) <= reads0 {
				t.Errorf("the reader on %s did not go on after the heal", a)
			}
		case len(during) > 0:
			t.Errorf("the reader on %s paused over %dms, and longer than it ever did away from the fault, while %s's FUSE process was killed and replaced: %v (centiseconds of uptime: length)",
				n, faultPause*10, a, during)
		}
	}
}

// lastReads is the last "reads N" of an openLoop log.
func lastReads(log string) int {
	n := 0
	for _, l := range strings.Split(log, "\n") {
		_, _ = fmt.Sscanf(l, "reads %d", &n)
	}
	return n
}

// slowReads reads an openLoop log: the slowest open and read logged
// outside [from, to] (uptime in centiseconds; the machine's own noise),
// and those over limit(outside) that started within it, as
// "start:length".
func slowReads(log string, from, to int64, limit func(outside int64) int64) (outside int64, during []string) {
	type slow struct{ start, length int64 }
	var in []slow
	for _, l := range strings.Split(log, "\n") {
		var r slow
		if _, err := fmt.Sscanf(l, "slow %d %d", &r.start, &r.length); err != nil {
			continue
		}
		if r.start+r.length >= from && r.start <= to {
			in = append(in, r)
		} else {
			outside = max(outside, r.length)
		}
	}
	for _, r := range in {
		if r.length > limit(outside) {
			during = append(during, fmt.Sprintf("%d:%d", r.start, r.length))
		}
	}
	return outside, during
}
