package cachestatus

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestObjectName(t *testing.T) {
	long := strings.Repeat("a", 200)
	dotted := strings.Repeat("b", 120) + "." + strings.Repeat("c", 60) // a cut may land on the dot
	tests := []struct {
		pv, node string
		prefix   string // the readable part expected
	}{
		{"pvc-5f1e", "localhost", "pvc-5f1e.localhost-"},
		{"a.b", "c", "a.b.c-"},
		{"a", "b.c", "a.b.c-"},
		{long, "node-1.example.com", ""},
		{long, long, ""},
		{"pv", dotted, ""},
		{dotted, "x", ""},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.pv[:min(len(tt.pv), 12)]+"/"+tt.node[:min(len(tt.node), 12)], func(t *testing.T) {
			got := ObjectName(tt.pv, tt.node)
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Fatalf("ObjectName(%q, %q) = %q: not a DNS subdomain: %v", tt.pv, tt.node, got, errs)
			}
			if again := ObjectName(tt.pv, tt.node); again != got {
				t.Errorf("not deterministic: %q then %q", got, again)
			}
			if tt.prefix != "" && !strings.HasPrefix(got, tt.prefix) {
				t.Errorf("ObjectName(%q, %q) = %q, want it to start with %q", tt.pv, tt.node, got, tt.prefix)
			}
			if len(got) > maxNameLength {
				t.Errorf("%d characters, want at most %d", len(got), maxNameLength)
			}
			if other, dup := seen[got]; dup {
				t.Errorf("%q names both %s and %s/%s", got, other, tt.pv, tt.node)
			}
			seen[got] = tt.pv + "/" + tt.node
		})
	}
}
