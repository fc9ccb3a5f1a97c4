package mountspec

import (
	"flag"
	"strings"
	"unicode"
)

// AddFlags declares on fs a flag for every mount setting that has one,
// writing into s, and returns their names. A flag is its setting's key in
// kebab case (metadataTTL: --metadata-ttl) and reads the setting's text
// form; s.Validate checks the setting's limits, as for any Spec.
func (s *Spec) AddFlags(fs *flag.FlagSet) []string {
	var names []string
	for _, st := range settings() {
		if st.usage == "" {
			continue
		}
		name := kebab(st.key)
		fs.Var(flagValue{st, s}, name, st.usage)
		names = append(names, name)
	}
	return names
}

// flagValue is one setting as a flag.Value.
type flagValue struct {
	st setting
	s  *Spec
}

func (v flagValue) String() string {
	if v.s == nil { // the flag package's zero value
		return ""
	}
	return v.st.format(*v.s)
}

func (v flagValue) Set(text string) error {
	t := *v.s
	if err := v.st.parse(&t, text); err != nil {
		return err
	}
	*v.s = t
	return nil
}

func (v flagValue) IsBoolFlag() bool { return v.st.boolean }

// kebab turns a lowerCamelCase key into a flag name: metadataTTL becomes
// metadata-ttl.
func kebab(key string) string {
	var b strings.Builder
	var prev rune
	for _, r := range key {
		if unicode.IsUpper(r) && unicode.IsLower(prev) {
			b.WriteByte('-')
		}
		b.WriteRune(unicode.ToLower(r))
		prev = r
	}
	return b.String()
}
