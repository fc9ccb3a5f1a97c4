package supervisor

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
	mountutils "k8s.io/mount-utils"
)

func TestPerMountFlagsKeepsNosuidNodev(t *testing.T) {
	const always = unix.MS_NOSUID | unix.MS_NODEV
	for _, tc := range []struct {
		name string
		opts []string
		want uintptr
	}{
		{"no mount found", nil, always},
		{"options without the flags", []string{"rw", "relatime"}, always},
		{"noexec noatime", []string{"rw", "nosuid", "nodev", "noexec", "noatime"}, always | unix.MS_NOEXEC | unix.MS_NOATIME},
		{"nodiratime", []string{"ro", "nodiratime"}, always | unix.MS_NODIRATIME},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := perMountFlags(tc.opts); got != tc.want {
				t.Errorf("perMountFlags(%q) = %#x, want %#x", tc.opts, got, tc.want)
			}
		})
	}
}

func TestFindLastMount(t *testing.T) {
	infos := []mountutils.MountInfo{
		{ID: 1, MountPoint: "/"},
		{ID: 2, MountPoint: "/staging", Major: 0, Minor: 40},
		{ID: 3, MountPoint: "/other"},
		{ID: 4, MountPoint: "/staging", Major: 0, Minor: 41},
	}
	mi, err := findLastMount(infos, "/staging/")
	if err != nil || mi.ID != 4 {
		t.Errorf("findLastMount(/staging/) = %d, %v; want mount 4", mi.ID, err)
	}
	if _, err := findLastMount(infos, "/none"); !errors.Is(err, ErrNotMounted) {
		t.Errorf("findLastMount(/none) = %v, want ErrNotMounted", err)
	}
}

func TestFindContainingMount(t *testing.T) {
	infos := []mountutils.MountInfo{
		{ID: 1, MountPoint: "/"},
		{ID: 2, MountPoint: "/shares/s1"},
		{ID: 3, MountPoint: "/shares/s10"},
		{ID: 4, MountPoint: "/shares/s1"}, // mounted over 2
	}
	for path, want := range map[string]int{
		"/shares/s1":          4,
		"/shares/s1/":         4,
		"/shares/s1/team-a/x": 4,
		"/shares/s10/y":       3,
		"/shares/s100":        1,
		"/var/lib":            1,
	} {
		if mi, ok := findContainingMount(infos, path); !ok || mi.ID != want {
			t.Errorf("findContainingMount(%s) = mount %d (%v), want %d", path, mi.ID, ok, want)
		}
	}
	if _, ok := findContainingMount(infos[1:3], "/var"); ok {
		t.Error("findContainingMount(/var) without a root mount found one")
	}
}
