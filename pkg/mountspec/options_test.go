package mountspec

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseOptions(t *testing.T) {
	got, err := ParseOptions([]string{" noexec", "", "noatime", "noexec", "allow_other"})
	if err != nil || !reflect.DeepEqual(got, []string{"noexec", "noatime", "allow_other"}) {
		t.Errorf("ParseOptions = %q, %v", got, err)
	}
	for _, bad := range [][]string{{"suid"}, {"uid=1000"}, {"ro", "rw"}, {"exec", "noexec"}, {"max_read=4096"}} {
		_, err := ParseOptions(bad)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseOptions(%q) = %v, want ErrInvalid", bad, err)
			continue
		}
		if !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("ParseOptions(%q): %v does not name the option", bad, err)
		}
		if len(bad) == 1 && !strings.Contains(err.Error(), strings.Join(AcceptedOptions(), ", ")) {
			t.Errorf("ParseOptions(%q): %v does not list the accepted options", bad, err)
		}
	}
	if len(OptionDocs()) != len(AcceptedOptions()) {
		t.Error("an option without documentation")
	}
}

func TestWithOptionsAndFlags(t *testing.T) {
	s, err := testSpec().WithOptions([]string{"ro", "noatime"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Flags{ReadOnly: true, NoExec: true, NoAtime: true}); s.Flags() != want || !s.ReadOnly {
		t.Errorf("flags %+v, read-only %v", s.Flags(), s.ReadOnly)
	}
	if _, err := testSpec().WithOptions([]string{"sync"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("WithOptions(sync) = %v, want ErrInvalid", err)
	}
}

// TestWithOptionsROWins: ro in one list of options (the attribute's, the
// PV's) wins over rw in the other, as the rw option's doc says; both in
// one list, or exec and noexec, are a contradiction.
func TestWithOptionsROWins(t *testing.T) {
	for _, tc := range []struct {
		name       string
		spec, opts []string
		want       []string
		readOnly   bool
	}{
		{"attribute rw, PV ro", []string{"rw", "noatime"}, []string{"ro"}, []string{"noatime", "ro"}, true},
		{"attribute ro, PV rw", []string{"ro"}, []string{" rw", "noexec"}, []string{"ro", "noexec"}, true},
		{"rw alone", []string{"rw"}, nil, []string{"rw"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testSpec()
			s.MountOptions = tc.spec
			got, err := s.WithOptions(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.MountOptions, tc.want) || got.ReadOnly != tc.readOnly || got.Flags().ReadOnly != tc.readOnly {
				t.Errorf("options %q read-only %v, want %q %v", got.MountOptions, got.ReadOnly, tc.want, tc.readOnly)
			}
		})
	}
	for _, tc := range []struct {
		name       string
		spec, opts []string
	}{
		{"ro and rw in one list", nil, []string{"ro", "rw"}},
		{"exec and noexec across lists", []string{"exec"}, []string{"noexec"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testSpec()
			s.MountOptions = tc.spec
			if _, err := s.WithOptions(tc.opts); !errors.Is(err, ErrInvalid) {
				t.Errorf("WithOptions = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestWithMountGroup(t *testing.T) {
	for _, tc := range []struct {
		name              string
		readOnly          bool
		group             string
		gid               int64
		fileMode, dirMode uint32
	}{
		{"none", false, "", -1, 0o600, 0o700},
		{"writable", false, "2000", 2000, 0o660, 0o770},
		{"read-only", true, "2000", 2000, 0o640, 0o750},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testSpec()
			s.ReadOnly = tc.readOnly
			s.GID = -1
			s.FileMode, s.DirMode = 0o600, 0o700
			gid, err := ParseMountGroup(tc.group)
			if err != nil {
				t.Fatal(err)
			}
			s = s.WithMountGroup(gid)
			if s.GID != tc.gid || uint32(s.FileMode) != tc.fileMode || uint32(s.DirMode) != tc.dirMode {
				t.Errorf("gid %d modes %04o %04o", s.GID, uint32(s.FileMode), uint32(s.DirMode))
			}
		})
	}
	for _, bad := range []string{"-1", "abc", "4294967296", "1e3"} {
		if _, err := ParseMountGroup(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseMountGroup(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}
