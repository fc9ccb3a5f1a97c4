package mountspec

import (
	"slices"
	"strings"
)

// option is one accepted mount option and what it does.
type option struct {
	name string
	doc  string
}

// options lists the accepted mount options, in documentation order. The
// README's volume attribute table and docs/architecture.md list the same.
func options() []option {
	return []option{
		{"ro", "mount read-only: every change fails with EROFS (as readOnly=true)"},
		{"rw", "read-write (the default; ro from the other list of options, readOnly=true or a reader access mode win)"},
		{"noexec", "programs on the volume cannot be executed"},
		{"exec", "programs may be executed (the default)"},
		{"noatime", "the kernel does not update access times"},
		{"nosuid", "always in effect: set-user-ID bits are ignored"},
		{"nodev", "always in effect: device files do not work"},
		{"allow_other", "always in effect: every user may access the mount"},
		{"default_permissions", "always in effect: the kernel checks permissions against the modes shown"},
	}
}

// AcceptedOptions returns the names of the accepted mount options.
func AcceptedOptions() []string {
	var names []string
	for _, o := range options() {
		names = append(names, o.name)
	}
	return names
}

// OptionDocs returns "name: what it does" for every accepted option.
func OptionDocs() []string {
	var docs []string
	for _, o := range options() {
		docs = append(docs, o.name+": "+o.doc)
	}
	return docs
}

// ParseOptions checks mount options (a volume's mountOptions attribute
// split at commas, or a PersistentVolume's spec.mountOptions) and returns
// them trimmed, without empty entries and duplicates, in their first
// order. An unknown option, or one that contradicts another (ro and rw,
// exec and noexec), is an error wrapping ErrInvalid that names it and the
// accepted options.
func ParseOptions(opts []string) ([]string, error) {
	accepted := AcceptedOptions()
	out := cleanOptions(opts)
	for _, o := range out {
		if !slices.Contains(accepted, o) {
			return nil, invalidf("mount option %q is not supported (accepted: %s)", o, strings.Join(accepted, ", "))
		}
	}
	for _, pair := range [][2]string{{"ro", "rw"}, {"noexec", "exec"}} {
		if slices.Contains(out, pair[0]) && slices.Contains(out, pair[1]) {
			return nil, invalidf("mount options %q and %q contradict each other", pair[0], pair[1])
		}
	}
	return out, nil
}

// cleanOptions returns opts trimmed, without empty entries and
// duplicates, in their first order; nil when none is left.
func cleanOptions(opts []string) []string {
	var out []string
	for _, o := range opts {
		if o = strings.TrimSpace(o); o != "" && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

// WithOptions returns s with opts (see ParseOptions) added to its mount
// options; "ro" makes it read-only. Options already there are kept, except
// that "ro" in either list wins over "rw" in the other (as readOnly=true
// and a reader access mode do): a volume's mountOptions attribute "rw"
// does not stop a PersistentVolume from being mounted "ro". Both in the
// same list, and "exec" with "noexec" anywhere, are still an error.
func (s Spec) WithOptions(opts []string) (Spec, error) {
	add, err := ParseOptions(opts)
	if err != nil {
		return Spec{}, err
	}
	all := append(slices.Clone(s.MountOptions), add...)
	if slices.Contains(all, "ro") {
		all = slices.DeleteFunc(all, func(o string) bool { return o == "rw" })
	}
	merged, err := ParseOptions(all)
	if err != nil {
		return Spec{}, err
	}
	if len(merged) == 0 {
		merged = nil
	}
	s.MountOptions = merged
	if slices.Contains(merged, "ro") {
		s.ReadOnly = true
	}
	return s, nil
}

// Flags are the per-mount flags of a mount and of every bind mount of it.
type Flags struct {
	ReadOnly bool
	NoExec   bool
	NoAtime  bool
}

// Flags returns the kernel mount flags s asks for. nosuid and nodev are
// always set by whoever mounts.
func (s Spec) Flags() Flags {
	return Flags{
		ReadOnly: s.ReadOnly || slices.Contains(s.MountOptions, "ro"),
		NoExec:   slices.Contains(s.MountOptions, "noexec"),
		NoAtime:  slices.Contains(s.MountOptions, "noatime"),
	}
}
