package volumeattr

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseWarmup(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []string // nil with ok: no warmup
		ok   bool
	}{
		{"empty", "", nil, true},
		{"only commas and blanks", " , ,", nil, true},
		{"whole volume", "/", []string{WarmupAll}, true},
		{"paths trimmed and normalised", " train/ , /val/labels.csv,,", []string{"train", "val/labels.csv"}, true},
		{"duplicates dropped", "a,a/,/a,b", []string{"a", "b"}, true},
		{"root among others", "a,/", []string{"a", WarmupAll}, true},
		{"spaces inside names kept", "my data/x y", []string{"my data/x y"}, true},
		{"dotdot", "a/../b", nil, false},
		{"dot", "./a", nil, false},
		{"empty segment", "a//b", nil, false},
		{"control character", "a\nb", nil, false},
		{"too many", strings.Repeat("p,", maxWarmupPaths) + "q", nil, true}, // duplicates: 2 paths
		{"too many distinct", func() string {
			var b strings.Builder
			for i := range maxWarmupPaths + 1 {
				b.WriteString("p" + strings.Repeat("x", i) + ",")
			}
			return b.String()
		}(), nil, false},
		{"too long", strings.Repeat("x", maxWarmupLength+1), nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := Parse(map[string]string{KeyWarmup: c.in}, nil)
			if !c.ok {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), KeyWarmup) || !strings.Contains(err.Error(), "comma-separated paths") {
					t.Fatalf("Parse(warmup=%q) = %v; want ErrInvalid naming the key and the accepted values", c.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(warmup=%q): %v", c.in, err)
			}
			if c.name == "too many" {
				if len(a.Warmup) != 2 {
					t.Errorf("Warmup = %q, want 2 paths", a.Warmup)
				}
				return
			}
			if !reflect.DeepEqual(a.Warmup, c.want) {
				t.Errorf("Warmup = %q, want %q", a.Warmup, c.want)
			}
			if b, err := Parse(Encode(a), nil); err != nil || !reflect.DeepEqual(b.Warmup, a.Warmup) {
				t.Errorf("round trip: %q, %v", b.Warmup, err)
			}
		})
	}
}
