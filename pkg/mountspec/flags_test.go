package mountspec

import (
	"errors"
	"flag"
	"io"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestAddFlags(t *testing.T) {
	s := Default()
	fs := flag.NewFlagSet("mount", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	names := s.AddFlags(fs)
	for _, name := range []string{"endpoint", "path-style", "cache-block-size", "metadata-ttl", "negative-metadata-ttl",
		"max-parallel-fetches", "op-timeout", "uid", "read-only", "open-mode", "mount-options"} {
		if !slices.Contains(names, name) || fs.Lookup(name) == nil {
			t.Errorf("no flag --%s among %q", name, names)
		}
	}
	for _, name := range []string{"backend", "bucket", "prefix", "project"} { // SOURCE says where the data is
		if fs.Lookup(name) != nil {
			t.Errorf("flag --%s: the source names it", name)
		}
	}
	err := fs.Parse([]string{"--path-style", "--metadata-ttl", "-1", "--read-ahead", "0", "--uid", "7",
		"--file-mode", "600", "--prefetch=false", "--op-timeout", "5s", "--mount-options", "ro,noexec", "--rclone-links"})
	if err != nil {
		t.Fatal(err)
	}
	if !s.PathStyle || s.MetadataTTL != Forever || s.ReadAhead != 0 || s.UID != 7 || s.FileMode != 0o600 ||
		s.Prefetch || s.OpTimeout != 5*time.Second || !reflect.DeepEqual(s.MountOptions, []string{"ro", "noexec"}) || !s.RcloneLinks {
		t.Errorf("spec %+v", s)
	}
	if f := fs.Lookup("cache-size"); f.DefValue != "10Gi" {
		t.Errorf("cache-size default %q", f.DefValue)
	}
	// Text the flag cannot read fails the flag and leaves the spec alone;
	// a value out of limits is Validate's, as for any spec.
	for _, tc := range []struct {
		args  []string
		parse bool
	}{
		{[]string{"--cache-size", "10GB"}, false}, {[]string{"--uid", "-1"}, false}, {[]string{"--open-mode", "client"}, false},
		{[]string{"--file-mode", "0999"}, false}, {[]string{"--metadata-ttl", "-5s"}, false}, {[]string{"--prefetch=maybe"}, false},
		{[]string{"--cache-block-size", "1000"}, true}, {[]string{"--max-parallel-fetches", "0"}, true}, {[]string{"--op-timeout", "0s"}, true},
		{[]string{"--file-mode", "4755"}, true}, {[]string{"--mount-options", "suid"}, true}, {[]string{"--region", "US"}, true},
	} {
		s := Default()
		s.Bucket = "b12"
		fs := flag.NewFlagSet("mount", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		s.AddFlags(fs)
		before := s
		err := fs.Parse(tc.args)
		switch {
		case !tc.parse && err == nil:
			t.Errorf("%q accepted", tc.args)
		case !tc.parse && !reflect.DeepEqual(s, before):
			t.Errorf("%q changed the spec to %+v", tc.args, s)
		case tc.parse && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.parse && !errors.Is(s.Validate(), ErrInvalid):
			t.Errorf("%q: Validate accepted %+v", tc.args, s)
		}
	}
}
