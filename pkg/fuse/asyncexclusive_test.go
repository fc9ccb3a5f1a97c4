package fuse

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/mountdefaults"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// TestAsyncExclusiveCreate: in uploadMode async an exclusive create sends
// nothing to the bucket (its claim is the first upload: one PUT per file
// in all), and stays exclusive within the mount. An upload whose earlier
// attempt was stored (its answer lost) finds its own object: no conflict.
// When another mount
// stores the name between the create and the upload, the upload keeps
// that object under a conflict name and puts the acknowledged file over
// the name: both contents are in the bucket, and the conflict is counted.
// On MinIO, whose If-None-Match decides.
func TestAsyncExclusiveCreate(t *testing.T) {
	s1, s2 := minioPair(t)
	store := newGateStore(s1)
	cfg := Config{Spec: mountspec.Spec{UploadMode: mountdefaults.UploadAsync, MetadataTTL: time.Minute,
		NegativeMetadataTTL: time.Minute, OpTimeout: 10 * time.Second}}
	m := mountStore(t, store, mountSpec{cfg: cfg})
	other := mountStore(t, s2, mountSpec{cfg: Config{Spec: mountspec.Spec{OpTimeout: 10 * time.Second}}})

	t.Run("no conflict: one PUT, no claim at create", func(t *testing.T) {
		store.hold()
		f := must(t, "create", func() (*os.File, error) {
			return os.OpenFile(path(m, "fresh"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		})
		if n := store.puts("fresh"); n != 0 {
			t.Errorf("an async exclusive create sent %d PUTs before its close, want 0", n)
		}
		if _, err := within(t, "second create", func() (*os.File, error) {
			return os.OpenFile(path(m, "fresh"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		}); errnoOf(err) != syscall.EEXIST {
			t.Errorf("a second exclusive create of a name the mount created: %v, want EEXIST", err)
		}
		must(t, "write", func() (int, error) { return f.Write([]byte("fresh data")) })
		must(t, "close", func() (struct{}, error) { return struct{}{}, f.Close() })
		store.open()
		waitUntil(t, "the upload", func() bool { return objectThere(t, s1, "fresh") })
		wantObject(t, s1, "fresh", []byte("fresh data"))
		if n := store.puts("fresh"); n != 1 {
			t.Errorf("%d PUTs of the file, want 1 (the upload is the claim)", n)
		}
	})

	t.Run("an attempt stored whose answer was lost", func(t *testing.T) {
		store.loseAnswer("lost") // the next PUT of it is stored, and fails
		writeFile(t, path(m, "lost"), []byte("stored once"), os.O_WRONLY|os.O_CREATE|os.O_EXCL)
		waitUntil(t, "the retry", func() bool { return m.fsys.Stats().UploadFailures >= 1 && m.fsys.Stats().PendingUploads == 0 })
		wantObject(t, s1, "lost", []byte("stored once"))
		if n := m.fsys.Stats().CreateConflicts; n != 0 {
			t.Errorf("%d conflicts: the retry took its own first attempt for another writer's object", n)
		}
		page, err := s1.List(t.Context(), objstore.ListOptions{Prefix: "lost" + conflictSuffix})
		if err != nil || len(page.Objects) != 0 {
			t.Errorf("kept aside: %v (%v), want nothing", page.Objects, err)
		}
	})

	t.Run("another writer stored the name before the upload", func(t *testing.T) {
		mine, theirs := []byte("acknowledged by the async mount"), []byte("stored first by the other mount")
		store.hold()
		writeFile(t, path(m, "contested"), mine, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
		wantNoObject(t, s1, "contested")
		// The other mount's exclusive create: the bucket has no object, so
		// its claim wins.
		writeFile(t, path(other, "contested"), theirs, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
		wantObject(t, s2, "contested", theirs)
		store.open()
		waitUntil(t, "the conflict", func() bool { return m.fsys.Stats().CreateConflicts == 1 })
		waitUntil(t, "the upload", func() bool { return m.fsys.Stats().PendingUploads == 0 })
		wantObject(t, s1, "contested", mine)
		page, err := s1.List(t.Context(), objstore.ListOptions{Prefix: "contested" + conflictSuffix})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Objects) != 1 {
			t.Fatalf("objects kept aside: %v, want one", page.Objects)
		}
		wantObject(t, s1, page.Objects[0].Key, theirs)
		if !strings.HasPrefix(page.Objects[0].Key, "contested.conflict-") {
			t.Errorf("kept as %s", page.Objects[0].Key)
		}
		got := must(t, "read", func() ([]byte, error) { return os.ReadFile(path(m, "contested")) })
		if !bytes.Equal(got, mine) {
			t.Errorf("the async mount reads %q, want its own %q", got, mine)
		}
	})
}
