//go:build k8se2e

package k8s

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

// TestStaticReadOnlyDataset is scenario 2: a pre-filled bucket as a
// static ReadOnlyMany volume, mounted by two pods at once: both read every
// file right, one FUSE process serves both, and a write fails with EROFS.
func TestStaticReadOnlyDataset(t *testing.T) {
	scenario(t, "static-readonly-dataset")
	ns := namespace(t, "e2e-dataset")
	s := openBucket(t, "e2e-dataset", true)
	sums := putObjects(t, s, "train/", 200, 96<<10)
	const handle = "e2e-dataset-rox"
	staticVolume(t, ns, "e2e-dataset", handle, "e2e-dataset", "", "ReadOnlyMany", map[string]string{"metadataTTL": "-1"})
	want := digest(sumsListing("/data/train", "train/", sums))
	script := `echo sum=$(sha256sum /data/train/* | sha256sum | cut -d' ' -f1)
if touch /data/new-file 2>/tmp/err; then echo "write succeeded"; exit 3; fi
cat /tmp/err
grep -q 'Read-only file system' /tmp/err || exit 4
echo READY
sleep 3600`
	// The pods do not ask for a read-only mount themselves: the refusal
	// must come from the volume (a ReadOnlyMany PV with readOnly set).
	// Both on one node: one FUSE process there serves both.
	for _, p := range []string{"reader-a", "reader-b"} {
		runPod(t, ns, pod{Name: p, Claim: "e2e-dataset", Script: script, Node: env.Nodes[0]})
	}
	for _, p := range []string{"reader-a", "reader-b"} {
		waitLog(t, ns, p, "READY", 3*time.Minute)
		log, _ := kubectlErr("-n", ns, "logs", p)
		if got := logValue(log, "sum"); got != want {
			t.Errorf("%s read the dataset as %s, want %s", p, got, want)
		}
	}
	for _, p := range []string{"reader-a", "reader-b"} {
		if ph := jsonpath(ns, "pod/"+p, "{.status.phase}"); ph != "Running" {
			t.Errorf("%s is %s, want Running (both pods at once)", p, ph)
		}
	}
	if pids := fuseProcesses(t, handle); len(pids) != 1 {
		t.Errorf("%d FUSE processes serve the volume (%v), want 1", len(pids), pids)
	}
	if k := keys(t, s, "new-file"); len(k) != 0 {
		t.Errorf("the refused write reached the bucket: %v", k)
	}
}

// slowReader streams /data/big/ckpt.bin through one descriptor, a MiB at
// a time with a pause, while another loop walks the small files; both
// print their sums. It also prints the mount's ID at start and end.
const slowReader = `echo mnt0=$(grep ' /data ' /proc/self/mountinfo | cut -d' ' -f1)
exec 3< /data/big/ckpt.bin
( i=0; while [ $i -lt $CHUNKS ]; do dd bs=1048576 count=1 <&3 2>/dev/null || exit 1; usleep $PAUSE; i=$((i+1)); done ) | sha256sum | cut -d' ' -f1 > /tmp/big &
big=$!
( for f in /data/small/*; do sha256sum "$f"; usleep $PAUSE; done ) | sha256sum | cut -d' ' -f1 > /tmp/small &
small=$!
echo STARTED
wait $big
wait $small
echo big=$(cat /tmp/big)
echo small=$(cat /tmp/small)
echo mnt1=$(grep ' /data ' /proc/self/mountinfo | cut -d' ' -f1)`

// slowDataset fills prefix with a big object of chunks MiB and 100 small
// ones, and returns the sums a slowReader must print.
func slowDataset(t *testing.T, bucket, prefix string, chunks int) (big, small string) {
	t.Helper()
	s := openBucket(t, bucket, true)
	body := content(prefix+"big/ckpt.bin", chunks<<20)
	if _, err := s.Put(t.Context(), prefix+"big/ckpt.bin", bytes.NewReader(body), objstore.PutOptions{Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	smallSums := putObjects(t, s, prefix+"small/", 100, 64<<10)
	return digest(string(body)), digest(sumsListing("/data/small", prefix+"small/", smallSums))
}

// checkSlowReader checks what a slowReader pod printed.
func checkSlowReader(t *testing.T, r podResult, big, small string) {
	t.Helper()
	if got := logValue(r.Log, "big"); got != big {
		t.Errorf("the big file read as %s, want %s", got, big)
	}
	if got := logValue(r.Log, "small"); got != small {
		t.Errorf("the small files read as %s, want %s", got, small)
	}
	if m0, m1 := logValue(r.Log, "mnt0"), logValue(r.Log, "mnt1"); m0 == "" || m0 != m1 {
		t.Errorf("the pod's mount changed from %q to %q", m0, m1)
	}
	if r.Restarts != 0 {
		t.Errorf("the pod's container restarted %d times", r.Restarts)
	}
}

// TestFUSEProcessKilled is scenario 3: the volume's FUSE process is
// SIGKILLed twice while a pod streams a large file and walks small files;
// the pod finishes with exit code 0 and every checksum right.
func TestFUSEProcessKilled(t *testing.T) {
	scenario(t, "fuse-process-killed")
	ns := namespace(t, "e2e-kill")
	big, small := slowDataset(t, "e2e-kill", "", 160)
	const handle = "e2e-kill-cold"
	staticVolume(t, ns, "e2e-kill", handle, "e2e-kill", "", "ReadOnlyMany", nil)
	script := "CHUNKS=160 PAUSE=50000\n" + slowReader
	runPod(t, ns, pod{Name: "reader", Claim: "e2e-kill", Script: script, ReadOnly: true})
	waitLog(t, ns, "reader", "STARTED", 2*time.Minute)
	for kill := 0; kill < 2; kill++ {
		time.Sleep(2 * time.Second)
		// The successor of the last kill may still be starting.
		var pids []int
		waitFor(t, fmt.Sprintf("kill %d: one FUSE process serving the volume", kill), 15*time.Second, func() bool {
			pids = fuseProcesses(t, handle)
			return len(pids) == 1
		})
		if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		t.Logf("killed FUSE process %d", pids[0])
	}
	r := mustSucceed(t, ns, "reader", 3*time.Minute)
	checkSlowReader(t, r, big, small)
}
