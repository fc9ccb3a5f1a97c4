package fuse

import (
	"github.com/basin-csi/basin/pkg/mountspec"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/bdi"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// TestMountRaisesReadAhead: a mount reads ahead more than the 128 KiB the
// kernel's INIT leaves it at, so that sequential reads arrive in 1 MiB
// requests.
func TestMountRaisesReadAhead(t *testing.T) {
	tm := mountStore(t, objstoretest.NewFake(), mountSpec{cfg: Config{Spec: mountspec.Spec{MetadataTTL: time.Minute}}})
	var st syscall.Stat_t
	if err := syscall.Stat(tm.dir, &st); err != nil {
		t.Fatal(err)
	}
	got, err := bdi.ReadAhead(st.Dev)
	if err != nil {
		t.Fatal(err)
	}
	if got != bdi.DefaultReadAhead {
		t.Errorf("read-ahead %d, want %d", got, bdi.DefaultReadAhead)
	}
}
