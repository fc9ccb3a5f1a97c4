package conventions

import (
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/basin-csi/basin/"

// layerRule constrains every package under one of from (module-relative
// prefixes): it may not depend, even indirectly, on anything under deny,
// and of the module's own packages only on those under allowOwn (when set).
type layerRule struct {
	name     string
	from     []string
	deny     []string // module-relative ("pkg/cache") or full import paths
	allowOwn []string // module-relative; nil means any not denied
}

var layerRules = []layerRule{
	{
		name: "objstore is the bottom layer (SDKs only)",
		from: []string{"pkg/objstore"},
		deny: []string{"github.com/hanwen/go-fuse", "go.etcd.io/bbolt",
			"github.com/container-storage-interface/spec"},
		allowOwn: []string{"pkg/objstore", "internal/"},
	},
	{
		name:     "the cache sits on objstore alone",
		from:     []string{"pkg/cache"},
		deny:     []string{"github.com/hanwen/go-fuse", "github.com/container-storage-interface/spec"},
		allowOwn: []string{"pkg/cache", "pkg/objstore", "internal/"},
	},
	{
		name:     "fuse sits on the cache and objstore",
		from:     []string{"pkg/fuse"},
		deny:     []string{"github.com/container-storage-interface/spec", "google.golang.org/grpc"},
		allowOwn: []string{"pkg/fuse", "pkg/cache", "pkg/objstore", "internal/"},
	},
	{
		name: "the supervisor starts FUSE processes and never links their code",
		from: []string{"pkg/supervisor", "pkg/fdholder"},
		deny: []string{"pkg/cache", "pkg/fuse", "pkg/admin", "pkg/metrics", "pkg/driver",
			"github.com/hanwen/go-fuse", "go.etcd.io/bbolt", "github.com/container-storage-interface/spec"},
	},
	{
		name: "the node plugin reaches FUSE processes through the supervisor",
		from: []string{"pkg/driver"},
		deny: []string{"pkg/cache", "pkg/fuse", "pkg/admin", "pkg/metrics",
			"github.com/hanwen/go-fuse", "go.etcd.io/bbolt"},
	},
	{
		name:     "leaves import no layer",
		from:     []string{"internal/", "pkg/warmup"},
		allowOwn: []string{"internal/", "pkg/warmup"},
	},
}

// under reports whether path is prefix or below it (prefixes ending in /
// match anything below).
func under(path, prefix string) bool {
	if strings.HasSuffix(prefix, "/") {
		return strings.HasPrefix(path, prefix)
	}
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

func full(p string) string {
	if strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
		return p // already an import path
	}
	return module + p
}

func anyUnder(path string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return under(path, full(p)) })
}

// violations checks graph (package → its transitive dependencies) against
// rules and returns one line per broken rule and dependency.
func violations(graph map[string][]string, rules []layerRule) []string {
	var out []string
	for _, pkg := range slices.Sorted(maps.Keys(graph)) {
		for _, r := range rules {
			if !anyUnder(pkg, r.from) {
				continue
			}
			for _, dep := range graph[pkg] {
				own := strings.HasPrefix(dep, module)
				if anyUnder(dep, r.deny) || (own && r.allowOwn != nil && !anyUnder(dep, r.allowOwn)) {
					out = append(out, fmt.Sprintf("%s depends on %s: %s",
						strings.TrimPrefix(pkg, module), strings.TrimPrefix(dep, module), r.name))
				}
			}
		}
	}
	return out
}

// TestImportGraph: no package of the module depends, directly or not, on
// a layer above it (non-test dependencies, as the binaries link them).
func TestImportGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) > 0 {
			graph[f[0]] = f[1:]
		}
	}
	for _, p := range []string{"pkg/supervisor", "pkg/cache", "pkg/fuse", "pkg/driver", "pkg/objstore"} {
		if _, ok := graph[module+p]; !ok {
			t.Fatalf("go list did not list %s: the rules check nothing", p)
		}
	}
	for _, v := range violations(graph, layerRules) {
		t.Error(v)
	}
}

// TestImportRulesCatchViolations: the checker reports an indirect
// dependency across layers, and passes a clean graph.
func TestImportRulesCatchViolations(t *testing.T) {
	clean := map[string][]string{
		module + "pkg/supervisor": {module + "pkg/objstore", module + "pkg/fdholder", "golang.org/x/sys/unix"},
		module + "pkg/fuse":       {module + "pkg/cache", module + "pkg/objstore", "github.com/hanwen/go-fuse/v2/fs"},
	}
	if v := violations(clean, layerRules); len(v) != 0 {
		t.Errorf("clean graph: %v", v)
	}
	broken := map[string][]string{
		// supervisor → metrics → fuse: only the indirect edge breaks the rule.
		module + "pkg/supervisor":        {module + "pkg/metrics", module + "pkg/fuse"},
		module + "pkg/objstore/s3store":  {module + "pkg/cache"},
		module + "internal/regfile":      {module + "pkg/objstore"},
		module + "pkg/driver/volumeattr": {"github.com/hanwen/go-fuse/v2/fuse"},
	}
	v := violations(broken, layerRules)
	for _, want := range []string{
		"pkg/supervisor depends on pkg/fuse",
		"pkg/objstore/s3store depends on pkg/cache",
		"internal/regfile depends on pkg/objstore",
		"pkg/driver/volumeattr depends on github.com/hanwen/go-fuse/v2/fuse",
	} {
		if !slices.ContainsFunc(v, func(s string) bool { return strings.HasPrefix(s, want+":") }) {
			t.Errorf("not reported: %s (got %q)", want, v)
		}
	}
}
