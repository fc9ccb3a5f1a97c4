package fuse

import (
	"slices"
	"testing"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// TestSetMountFlagsSurvivesFusermount checks that noexec and noatime are
// never lost on a standalone mount: noexec is also an option string (which
// fusermount reads), and noatime forbids the fusermount fallback.
func TestSetMountFlagsSurvivesFusermount(t *testing.T) {
	const always = unix.MS_NOSUID | unix.MS_NODEV
	for _, tc := range []struct {
		name       string
		opts       MountOptions
		wantFlags  uintptr
		wantNoExec bool
		wantStrict bool
	}{
		{"plain", MountOptions{}, always, false, false},
		{"noexec", MountOptions{NoExec: true}, always | unix.MS_NOEXEC, true, false},
		{"noatime", MountOptions{NoAtime: true}, always | unix.MS_NOATIME, false, true},
		{"both", MountOptions{NoExec: true, NoAtime: true}, always | unix.MS_NOEXEC | unix.MS_NOATIME, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mo gofuse.MountOptions
			setMountFlags(&mo, tc.opts)
			if !mo.DirectMount || mo.DirectMountFlags != tc.wantFlags {
				t.Errorf("DirectMount %v flags %#x, want true %#x", mo.DirectMount, mo.DirectMountFlags, tc.wantFlags)
			}
			if got := slices.Contains(mo.Options, "noexec"); got != tc.wantNoExec {
				t.Errorf("options %q: noexec %v, want %v", mo.Options, got, tc.wantNoExec)
			}
			if slices.Contains(mo.Options, "noatime") {
				t.Errorf("options %q name noatime, which mount(2) rejects as a string", mo.Options)
			}
			if mo.DirectMountStrict != tc.wantStrict {
				t.Errorf("DirectMountStrict = %v, want %v", mo.DirectMountStrict, tc.wantStrict)
			}
		})
	}
}
