package cache

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/filestore"
)

// The crash test re-executes the test binary as a child that caches data
// (reads, prefetches, installs, inode allocations, evictions under a small
// capacity) over a filestore bucket shared with the parent, and kills it
// with SIGKILL at a random moment. After each kill the parent reopens the
// cache: Verify must pass, every read must return the bucket's bytes, and
// every inode number the child handed out must still map to its path.

const (
	crashChildEnv  = "BASIN_CACHE_CRASH_CHILD"
	crashCacheEnv  = "BASIN_CACHE_CRASH_DIR"
	crashBucketEnv = "BASIN_CACHE_CRASH_BUCKET"
	crashLogEnv    = "BASIN_CACHE_CRASH_INODES"
	crashObjects   = 24
)

func crashOpts() Options {
	o := testOpts()
	o.Origin = "file://crash/"
	o.CacheSize = 3 * mib // forces eviction while the child runs
	o.MetadataTTL = 0
	o.NegativeMetadataTTL = 0
	return o
}

func crashKey(i int) string { return fmt.Sprintf("d%d/obj-%02d", i%3, i) }

func crashData(i, gen int) []byte {
	size := 1 + (i*37*kib+gen*5*kib)%(600*kib)
	return randBytes(uint64(i*1000+gen), size)
}

// crashChild runs until killed.
func crashChild() {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(3)
	}
	ctx := context.Background()
	store, err := filestore.New(objstore.Config{Backend: objstore.BackendFile, Bucket: os.Getenv(crashBucketEnv)})
	if err != nil {
		fail(err)
	}
	c, err := open(ctx, os.Getenv(crashCacheEnv), store, crashOpts(), testTuning())
	if err != nil {
		fail(err)
	}
	inoLog, err := os.OpenFile(os.Getenv(crashLogEnv), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fail(err)
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	buf := make([]byte, 40*kib)
	for gen := 100 * os.Getpid(); ; gen++ {
		i := r.IntN(crashObjects)
		key := crashKey(i)
		op := r.IntN(10)
		switch op {
		case 0: // write-through of a new version
			data := crashData(i, gen)
			staged := filepath.Join(c.StagingDir(), "up")
			if err := os.WriteFile(staged, data, 0o600); err != nil {
				fail(err)
			}
			info, err := store.Put(ctx, key, bytes.NewReader(data), objstore.PutOptions{Size: int64(len(data))})
			if err != nil {
				fail(err)
			}
			// ErrNoSpace is Install's answer when eviction cannot catch up
			// with the child's reads; the bucket has the data either way.
			if err := c.Install(ctx, info, staged); err != nil && !errors.Is(err, ErrNoSpace) {
				fail(err)
			}
		case 1: // inode allocation
			p := fmt.Sprintf("dir%d/file-%d", r.IntN(5), r.IntN(50))
			ino, err := c.InodeOf(p)
			if err != nil {
				fail(err)
			}
			_, _ = fmt.Fprintf(inoLog, "%s %d\n", p, ino)
		default: // reads, some of them prefetching
			info, err := c.Stat(ctx, key)
			if err != nil {
				fail(err)
			}
			h, err := c.OpenObject(ctx, info)
			if err != nil {
				fail(err)
			}
			if op == 2 {
				h.Prefetch(0, info.Size)
			}
			off := r.Int64N(info.Size)
			if _, err := h.ReadAt(ctx, buf, off); err != nil && err != io.EOF {
				fail(err)
			}
			_ = h.Close()
		}
	}
}

func TestCrashRecovery(t *testing.T) {
	testserver.SkipShort(t, "20 rounds of a child process killed")
	bucketDir, cacheDir := t.TempDir(), t.TempDir()
	logPath := filepath.Join(t.TempDir(), "inodes")
	store, err := filestore.New(objstore.Config{Backend: objstore.BackendFile, Bucket: bucketDir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = store.Close() }()
	for i := 0; i < crashObjects; i++ {
		put(t, store, crashKey(i), crashData(i, 0))
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(42, 43))
	const rounds = 20
	var logged, lost int
	seen := map[string]bool{}
	for round := 0; round < rounds; round++ {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"=1", crashCacheEnv+"="+cacheDir,
			crashBucketEnv+"="+bucketDir, crashLogEnv+"="+logPath)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(50+r.IntN(400)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("round %d: child ended on its own (%v): %s", round, err, stderr.String())
		}
		checkAfterCrash(t, round, cacheDir, store, logPath, seen, &logged, &lost)
	}
	t.Logf("%d rounds: %d inode allocations logged, %d lost with the commit in flight", rounds, logged, lost)
	if logged == 0 {
		t.Error("the child never allocated an inode")
	}
	if lost*2 > logged {
		t.Errorf("%d of %d inode allocations lost: commits do not keep up", lost, logged)
	}
}

func checkAfterCrash(t *testing.T, round int, cacheDir string, store objstore.Store, logPath string, seen map[string]bool, logged, lost *int) {
	t.Helper()
	ctx := context.Background()
	c := openTest(t, cacheDir, store, crashOpts())
	defer func() { _ = c.Close() }()
	if rep, err := c.Verify(ctx); err != nil {
		t.Fatalf("round %d: verify after crash: %v\n%s", round, err, strings.Join(rep.Problems, "\n"))
	}
	for i := 0; i < crashObjects; i++ {
		info, err := store.Stat(ctx, crashKey(i))
		if err != nil {
			t.Fatal(err)
		}
		rc, _, err := store.Read(ctx, info.Key, objstore.ReadOptions{Length: -1})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := io.ReadAll(rc)
		_ = rc.Close()
		if got := readObject(t, c, info); !bytes.Equal(got, want) {
			t.Fatalf("round %d: %s: cache returned bytes that differ from the bucket", round, info.Key)
		}
	}
	f, err := os.Open(logPath)
	if err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			path, num, ok := strings.Cut(sc.Text(), " ")
			want, perr := strconv.ParseUint(num, 10, 64)
			if !ok || perr != nil {
				continue // torn last line
			}
			// A pair may be lost with the commit in flight at the kill, but
			// then its number maps to nothing and the path gets a new,
			// higher one; a number never names another path.
			got, err := c.InodeOf(path)
			if err != nil {
				t.Fatal(err)
			}
			first := !seen[sc.Text()]
			seen[sc.Text()] = true
			if got != want {
				if back, ok := c.PathOf(want); ok || got < want {
					t.Fatalf("round %d: %s has inode %d; the killed child handed out %d, which now names %q", round, path, got, want, back)
				}
				if first {
					*lost++
				}
			}
			if first {
				*logged++
			}
		}
		_ = f.Close()
	}
	if rep, err := c.Verify(ctx); err != nil {
		t.Fatalf("round %d: verify after reads: %v\n%s", round, err, strings.Join(rep.Problems, "\n"))
	}
}
