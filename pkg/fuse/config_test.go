package fuse

import (
	"os"
	"testing"

	"github.com/basin-csi/basin/internal/mountdefaults"
	"github.com/basin-csi/basin/pkg/mountspec"
)

// TestConfigReadsTheSpec: the file system takes a mount's settings from
// the spec it embeds, as the spec means them: a negative owner is the
// mounting process's, the "ro" mount option makes it read-only (and so
// allows the kernel open mode), a zero mode is the default.
func TestConfigReadsTheSpec(t *testing.T) {
	spec := mountspec.Default()
	spec.MountOptions = []string{"ro"}
	spec.OpenMode = mountdefaults.OpenKernel
	spec.FileMode, spec.UID, spec.GID = 0, -1, 7
	c := Config{Spec: spec}
	if err := c.Validate(); err != nil {
		t.Fatalf("kernel open mode on a mount with option ro: %v", err)
	}
	c = c.withDefaults()
	if !c.ReadOnly || c.UID != int64(os.Geteuid()) || c.GID != 7 || c.FileMode != DefaultFileMode {
		t.Errorf("read-only %v, uid %d (want %d), gid %d (want 7), file mode %o (want %o)",
			c.ReadOnly, c.UID, os.Geteuid(), c.GID, c.FileMode, DefaultFileMode)
	}
	if (Config{}).withDefaults().BufferSize != mountspec.DefaultBufferSize {
		t.Errorf("a config without bufferSize (an older hand-off) defaults to %d, want %d", (Config{}).withDefaults().BufferSize, mountspec.DefaultBufferSize)
	}
	if c.ReadAhead != spec.ReadAhead || c.MetadataTTL != spec.MetadataTTL {
		t.Errorf("read-ahead %d, metadata TTL %v; want the spec's %d, %v", c.ReadAhead, c.MetadataTTL, spec.ReadAhead, spec.MetadataTTL)
	}
}
