//go:build k8se2e

package k8s

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

// The write-here-read-there scenario's figures.
const (
	// xnodeTTL is the volume's metadataTTL: how long node B may trust a
	// listing or an object's attributes it read.
	xnodeTTL = 10 * time.Second
	// xnodeSlack is what a change may take on top of the TTL to reach
	// the reader (a kubectl exec, a poll).
	xnodeSlack = 3 * time.Second
	// The checkpoint's MiB, the small files and their size, and the size
	// of the file overwritten while node B reads it (several cache
	// blocks: a torn read would mix them).
	xnodeCheckpointMiB = 1024
	xnodeSmallFiles    = 1000
	xnodeSmallSize     = 4096
	xnodeOverwriteMiB  = 24
)

// overwriteReader is node B's reader pod: it waits for /tmp/ow-start,
// then opens and checksums /data/ow.bin again and again until /tmp/ow-stop,
// printing "ow START END SUM" per read (uptime in centiseconds; SUM is
// ERR when the read failed).
const overwriteReader = clockShell + `echo READY
while [ ! -e /tmp/ow-start ]; do sleep 0.2; done
while [ ! -e /tmp/ow-stop ]; do
  now; t0=$NOW
  s=$(sha256sum /data/ow.bin 2>/dev/null) || s=ERR
  now
  echo "ow $t0 $NOW ${s%% *}"
  sleep 0.1
done
echo OWDONE
sleep 3600`

// TestWriteOnOneNodeReadOnAnother is scenario 1 between nodes: a writer
// pod on node A writes and closes a 1 GiB checkpoint and 1,000 small
// files; a reader pod on node B, whose mount never saw their names, reads
// them byte-exact at once. A name A adds to a directory B had listed
// shows on B within the metadata TTL. A file A overwrites while B opens
// and reads it again and again reads as the whole old or the whole new
// version every time, and as the new one within the TTL.
func TestWriteOnOneNodeReadOnAnother(t *testing.T) {
	scenario(t, "write-here-read-there")
	a, b, _ := threeNodes(t)
	ns := namespace(t, "e2e-xnode-rw")
	s := openBucket(t, "e2e-xnode-rw", true)
	seed := []byte("seed\n")
	if _, err := s.Put(t.Context(), "listed/seed", bytes.NewReader(seed), objstore.PutOptions{Size: int64(len(seed))}); err != nil {
		t.Fatal(err)
	}
	staticVolume(t, ns, "e2e-xnode-rw", "e2e-xnode-rw-vol", "e2e-xnode-rw", "", "ReadWriteMany",
		map[string]string{"metadataTTL": xnodeTTL.String()})
	runPod(t, ns, pod{Name: "writer", Claim: "e2e-xnode-rw", Script: "echo READY\nsleep 3600", Node: a})
	runPod(t, ns, pod{Name: "reader", Claim: "e2e-xnode-rw", Script: overwriteReader, ReadOnly: true, Node: b})
	waitLog(t, ns, "writer", "READY", 2*time.Minute)
	waitLog(t, ns, "reader", "READY", 2*time.Minute)
	if got := podNode(ns, "writer") + "," + podNode(ns, "reader"); got != a+","+b {
		t.Fatalf("writer and reader on %s, want %s,%s", got, a, b)
	}

	// The data, made on A's local disk first: the sums it prints are
	// what the pod meant to write, not what the mount read back.
	start := time.Now()
	gen := execIn(t, ns, "writer", fmt.Sprintf(`mkdir /tmp/small
dd if=/dev/urandom of=/tmp/ckpt bs=1M count=%d 2>/dev/null
echo ckpt=$(sha256sum /tmp/ckpt | cut -d' ' -f1)
i=0; while [ $i -lt %d ]; do head -c %d /dev/urandom > /tmp/small/f$(printf %%04d $i); i=$((i+1)); done
echo small=$(cd /tmp/small && sha256sum * | sha256sum | cut -d' ' -f1)
for v in 1 2; do dd if=/dev/urandom of=/tmp/ow$v bs=1M count=%d 2>/dev/null; echo ow$v=$(sha256sum /tmp/ow$v | cut -d' ' -f1); done`,
		xnodeCheckpointMiB, xnodeSmallFiles, xnodeSmallSize, xnodeOverwriteMiB))
	ckptSum, smallSum, ow1, ow2 := logValue(gen, "ckpt"), logValue(gen, "small"), logValue(gen, "ow1"), logValue(gen, "ow2")
	t.Logf("data made on %s in %v", a, time.Since(start).Round(time.Second))

	// The file overwritten later: A writes version 1, B reads it (its
	// cache now holds version 1 and its attributes).
	execIn(t, ns, "writer", "cp /tmp/ow1 /data/ow.bin")
	if got := logValue(execIn(t, ns, "reader", "echo ow=$(sha256sum /data/ow.bin | cut -d' ' -f1)"), "ow"); got != ow1 {
		t.Fatalf("%s read version 1 of ow.bin as %s, want %s", b, got, ow1)
	}

	// The checkpoint and the small files: closed on A, in the bucket.
	start = time.Now()
	execIn(t, ns, "writer", "mkdir -p /data/run/small\ncp /tmp/ckpt /data/run/ckpt.bin")
	t.Logf("%d MiB checkpoint written and closed on %s in %v", xnodeCheckpointMiB, a, time.Since(start).Round(100*time.Millisecond))
	start = time.Now()
	execIn(t, ns, "writer", "cp /tmp/small/* /data/run/small/")
	t.Logf("%d small files written and closed on %s in %v", xnodeSmallFiles, a, time.Since(start).Round(100*time.Millisecond))
	if got := objectSum(t, s, "run/ckpt.bin"); got != ckptSum {
		t.Errorf("the bucket holds the checkpoint as %s, want %s", got, ckptSum)
	}
	if got := bucketDirSum(t, s, "run/small/"); got != smallSum {
		t.Errorf("the bucket holds the small files as %s, want %s", got, smallSum)
	}

	// B never listed run/: the names are there at once, the first time.
	start = time.Now()
	read := execIn(t, ns, "reader", `echo ckpt=$(sha256sum /data/run/ckpt.bin | cut -d' ' -f1)
echo n=$(ls /data/run/small | wc -l)
echo small=$(cd /data/run/small && sha256sum * | sha256sum | cut -d' ' -f1)`)
	t.Logf("%s read the checkpoint and the small files in %v", b, time.Since(start).Round(100*time.Millisecond))
	if got := logValue(read, "ckpt"); got != ckptSum {
		t.Errorf("%s read the checkpoint as %q, want %s", b, got, ckptSum)
	}
	if got := logValue(read, "n"); got != fmt.Sprint(xnodeSmallFiles) {
		t.Errorf("%s lists %s small files, want %d", b, got, xnodeSmallFiles)
	}
	if got := logValue(read, "small"); got != smallSum {
		t.Errorf("%s read the small files as %q, want %s", b, got, smallSum)
	}

	listedWithinTTL(t, ns, a, b)
	overwriteWithinTTL(t, ns, s, ow1, ow2)
}

// listedWithinTTL: B lists listed/ (the listing is now in its cache),
// then A adds listed/new; B lists it within the TTL of its listing. B's
// pod polls itself, timed by the clock it shares with the test (a
// kubectl exec per poll would cost more than the slack allowed).
func listedWithinTTL(t *testing.T, ns, a, b string) {
	t.Helper()
	out := execIn(t, ns, "reader", clockShell+"ls /data/listed | sed 's/^/name=/'\nnow; echo listed=$NOW")
	listed, ok := parseCS(logValue(out, "listed"))
	if got := logValue(out, "name"); !ok || got != "seed" || strings.Count(out, "name=") != 1 {
		t.Fatalf("%s lists listed/ as %q, want seed only", b, out)
	}
	out = execIn(t, ns, "writer", clockShell+"echo new > /data/listed/new\nnow; echo closed=$NOW")
	closed, _ := parseCS(logValue(out, "closed"))
	limit := listed + (xnodeTTL+xnodeSlack).Milliseconds()/10
	out = execIn(t, ns, "reader", clockShell+fmt.Sprintf(`polls=0
while now; [ $NOW -le %d ]; do
  polls=$((polls+1))
  case " $(ls /data/listed | tr '\n' ' ') " in
    *" new "*) echo seen=$NOW; echo polls=$polls; echo content=$(cat /data/listed/new); exit 0 ;;
  esac
  sleep 0.2
done
echo seen=never; echo polls=$polls`, limit))
	seen, ok := parseCS(logValue(out, "seen"))
	if !ok {
		t.Errorf("%s still lists listed/ without the name %s added %.2fs after its listing (metadataTTL %v; %s polls)",
			b, a, float64(limit-listed)/100, xnodeTTL, logValue(out, "polls"))
		return
	}
	if got := logValue(out, "content"); got != "new" {
		t.Errorf("%s read listed/new as %q", b, got)
	}
	t.Logf("the name %s added to a directory %s had listed: listed there %.2fs after its listing, %.2fs after the close (metadataTTL %v, poll %s)",
		a, b, float64(seen-listed)/100, float64(seen-closed)/100, xnodeTTL, logValue(out, "polls"))
}

// overwriteWithinTTL: while B's reader opens and checksums ow.bin again
// and again, A overwrites it with version 2. Every read is of the whole
// version 1 or 2; the first of version 2 starts within the TTL of A's
// close, and none of version 1 follows it.
func overwriteWithinTTL(t *testing.T, ns string, s objstore.Store, ow1, ow2 string) {
	t.Helper()
	execIn(t, ns, "reader", "touch /tmp/ow-start")
	time.Sleep(2 * time.Second) // a few reads of version 1 first
	out := execIn(t, ns, "writer", clockShell+"now; echo begin=$NOW\ncp /tmp/ow2 /data/ow.bin\nnow; echo closed=$NOW")
	begin, _ := parseCS(logValue(out, "begin"))
	closed, ok := parseCS(logValue(out, "closed"))
	if !ok {
		t.Fatalf("writer: %q", out)
	}
	deadline := closed + (xnodeTTL+xnodeSlack).Milliseconds()/10
	waitFor(t, "the reader's reads past the TTL of the overwrite", xnodeTTL+xnodeSlack+time.Minute, func() bool {
		return uptime(t) > deadline+100
	})
	execIn(t, ns, "reader", "touch /tmp/ow-stop")
	waitLog(t, ns, "reader", "OWDONE", time.Minute)
	if got := objectSum(t, s, "ow.bin"); got != ow2 {
		t.Errorf("the bucket holds ow.bin as %s, want version 2 %s", got, ow2)
	}

	logs := kubectl(t, "-n", ns, "logs", "reader")
	var reads, old, fresh, bad int
	firstNew, firstNewEnd := int64(-1), int64(-1)
	for _, line := range strings.Split(logs, "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "ow" {
			continue
		}
		t0, ok0 := parseCS(f[1])
		t1, ok1 := parseCS(f[2])
		if !ok0 || !ok1 {
			t.Fatalf("reader: %q", line)
		}
		reads++
		switch f[3] {
		case ow1:
			old++
			if firstNew >= 0 && t0 > firstNewEnd {
				t.Errorf("a read started %.2fs after the first read of version 2 ended saw version 1 again", float64(t0-firstNewEnd)/100)
			}
		case ow2:
			fresh++
			if firstNew < 0 {
				firstNew, firstNewEnd = t0, t1
			}
			if t1 < begin {
				t.Errorf("a read that ended before the overwrite began saw version 2")
			}
		default:
			bad++
			t.Errorf("a read (%.2fs..%.2fs after the overwrite's close) saw %s: neither version 1 nor version 2 (torn or failed)",
				float64(t0-closed)/100, float64(t1-closed)/100, f[3])
		}
	}
	first := "none"
	if fresh > 0 {
		first = fmt.Sprintf("%.2fs after the close", float64(firstNew-closed)/100)
	}
	t.Logf("%d reads of ow.bin: %d of version 1, %d of version 2, %d of neither; the first of version 2 started %s (metadataTTL %v)",
		reads, old, fresh, bad, first, xnodeTTL)
	switch {
	case fresh == 0:
		t.Errorf("no read saw version 2 within %v of the overwrite's close (metadataTTL %v)", xnodeTTL+xnodeSlack, xnodeTTL)
	case firstNew > deadline:
		t.Errorf("the first read of version 2 started %.2fs after the overwrite's close, past the metadataTTL %v (+%v)",
			float64(firstNew-closed)/100, xnodeTTL, xnodeSlack)
	}
	if old == 0 {
		t.Errorf("no read saw version 1: the reader did not run across the change")
	}
}

// parseCS parses a centiseconds count of clockShell's now.
func parseCS(s string) (int64, bool) {
	var n int64
	_, err := fmt.Sscanf(s, "%d", &n)
	return n, err == nil && s != ""
}

// bucketDirSum is what `cd DIR && sha256sum * | sha256sum` prints for
// the objects under prefix (one level, names sorted as the shell sorts
// them; the directory's own marker, which mkdir made, is no file).
func bucketDirSum(t *testing.T, s objstore.Store, prefix string) string {
	t.Helper()
	var b strings.Builder
	for _, k := range keys(t, s, prefix) {
		if strings.HasSuffix(k, "/") {
			continue // a directory's marker: no file in the directory
		}
		fmt.Fprintf(&b, "%s  %s\n", objectSum(t, s, k), path.Base(k))
	}
	h := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(h[:])
}
