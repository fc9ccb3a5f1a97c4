package fuse

import (
	"fmt"
	"github.com/basin-csi/basin/pkg/mountspec"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/filestore"
	"github.com/basin-csi/basin/pkg/objstore/s3store"
)

// exclusiveRounds is how many times two mounts race to create one name.
const exclusiveRounds = 100

// TestExclusiveCreateAcrossMounts: two mounts of one bucket, each with its
// own store client and cache, race open(O_CREAT|O_EXCL) on a fresh name,
// 100 times, on MinIO, on fake-gcs-server and on a local directory. Both mounts looked the name
// up first (a negative entry in each kernel and cache), so only the
// store can tell them apart. Every round exactly one open succeeds and
// the other fails with EEXIST, and the name then holds what the winner
// wrote, through both mounts.
func TestExclusiveCreateAcrossMounts(t *testing.T) {
	for _, b := range []struct {
		name  string
		store func(t *testing.T) (objstore.Store, objstore.Store)
	}{
		{"minio", minioPair},
		{"gcs", gcsPair},
		{"file", filePair},
	} {
		t.Run(b.name, func(t *testing.T) {
			s1, s2 := b.store(t)
			cfg := Config{Spec: mountspec.Spec{MetadataTTL: time.Minute, NegativeMetadataTTL: time.Minute, OpTimeout: 10 * time.Second}}
			m1 := mountStore(t, s1, mountSpec{cfg: cfg})
			m2 := mountStore(t, s2, mountSpec{cfg: cfg})
			mounts := [2]*testMount{m1, m2}
			wins := [2]int{}
			for round := range exclusiveRounds {
				name := fmt.Sprintf("claim-%03d", round)
				for _, m := range mounts {
					if _, err := within(t, "stat", func() (os.FileInfo, error) { return os.Stat(path(m, name)) }); errnoOf(err) != syscall.ENOENT {
						t.Fatalf("round %d: stat before the race: %v, want ENOENT", round, err)
					}
				}
				errs := raceCreate(t, mounts, name)
				winner := -1
				for i, err := range errs {
					switch {
					case err == nil && winner >= 0:
						t.Fatalf("round %d: both mounts created %s", round, name)
					case err == nil:
						winner = i
					case errnoOf(err) != syscall.EEXIST:
						t.Fatalf("round %d: mount %d: %v, want success or EEXIST", round, i, err)
					}
				}
				if winner < 0 {
					t.Fatalf("round %d: neither mount created %s", round, name)
				}
				wins[winner]++
				want := []byte(fmt.Sprintf("owner %d", winner))
				wantObject(t, s1, name, want)
				for _, m := range mounts {
					got := must(t, "read", func() ([]byte, error) { return os.ReadFile(path(m, name)) })
					if string(got) != string(want) {
						t.Fatalf("round %d: %s reads %q through a mount, want %q", round, name, got, want)
					}
				}
			}
			t.Logf("%d rounds: mount 1 won %d, mount 2 won %d, the other got EEXIST every time", exclusiveRounds, wins[0], wins[1])
		})
	}
}

// raceCreate opens name with O_CREAT|O_EXCL on every mount at once; a
// winner writes "owner <i>" and closes. It returns each open's error.
func raceCreate(t *testing.T, mounts [2]*testMount, name string) [2]error {
	t.Helper()
	var errs [2]error
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, m := range mounts {
		wg.Go(func() {
			<-start
			_, errs[i] = within(t, "create", func() (int, error) {
				f, err := os.OpenFile(path(m, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
				if err != nil {
					return 0, err
				}
				n, err := fmt.Fprintf(f, "owner %d", i)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					t.Errorf("mount %d: write after winning: %v", i, err)
				}
				return n, nil
			})
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// filePair is two filestores of one directory.
func filePair(t *testing.T) (objstore.Store, objstore.Store) {
	s1, dir := newFileStore(t)
	s2, err := filestore.New(objstore.Config{Backend: objstore.BackendFile, Bucket: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s2.Close() })
	return s1, s2
}

// minioPair is two clients of one fresh MinIO bucket.
func minioPair(t *testing.T) (objstore.Store, objstore.Store) {
	srv := testserver.MinIO(t)
	bucket := newMinIOBucket(t, srv)
	open := func() objstore.Store {
		s, err := s3store.New(t.Context(), minioConfig(srv, bucket), minioCreds(srv))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	return open(), open()
}

// gcsPair is two clients of one fresh fake-gcs-server bucket.
func gcsPair(t *testing.T) (objstore.Store, objstore.Store) {
	cfg := gcsBucketConfig(t)
	return newGCSStore(t, cfg), newGCSStore(t, cfg)
}
