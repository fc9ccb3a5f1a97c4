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

// Third-party layers, by the module path prefixes that bring them in.
var (
	sdks       = []string{"github.com/aws/aws-sdk-go-v2", "cloud.google.com/go/storage"}
	goFuse     = "github.com/hanwen/go-fuse"
	bbolt      = "go.etcd.io/bbolt"
	csiSpec    = "github.com/container-storage-interface/spec"
	grpc       = "google.golang.org/grpc"
	apiClients = []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime"}
	adapters   = []string{"pkg/objstore/s3store", "pkg/objstore/gcsstore", "pkg/objstore/filestore", "pkg/objstore/backend"}
)

// topLevel are the module's commands, benchmarks and tests: nothing
// below imports them (the last rule), and they may import anything.
var topLevel = []string{"cmd/", "bench/", "hack/", "tests/"}

// layerRules cover every package of the module (TestEveryPackageRuled)
// and each is shown to catch a planted back-import (rulePlants).
var layerRules = []layerRule{
	{
		name:     "objstore is the bottom layer (SDKs only)",
		from:     []string{"pkg/objstore"},
		deny:     []string{goFuse, bbolt, csiSpec},
		allowOwn: []string{"pkg/objstore", "internal/"},
	},
	{
		name:     "the cache sits on objstore alone",
		from:     []string{"pkg/cache"},
		deny:     []string{goFuse, csiSpec},
		allowOwn: []string{"pkg/cache", "pkg/mountspec", "pkg/objstore", "internal/"},
	},
	{
		name:     "fuse sits on the cache and objstore",
		from:     []string{"pkg/fuse"},
		deny:     []string{csiSpec, grpc},
		allowOwn: []string{"pkg/fuse", "pkg/cache", "pkg/mountspec", "pkg/objstore", "internal/"},
	},
	{
		name:     "the takeover layer wraps go-fuse's protocol, never the file system",
		from:     []string{"pkg/fuse/takeover"},
		deny:     []string{"github.com/hanwen/go-fuse/v2/fs", bbolt},
		allowOwn: []string{"pkg/fuse/takeover", "internal/"},
	},
	{
		name: "the supervisor starts FUSE processes and never links their code",
		from: []string{"pkg/supervisor", "pkg/fdholder"},
		deny: []string{"pkg/cache", "pkg/fuse", "pkg/admin", "pkg/metrics", "pkg/driver", goFuse, bbolt, csiSpec},
	},
	{
		name: "the node plugin reaches FUSE processes through the supervisor",
		from: []string{"pkg/driver"},
		deny: append([]string{"pkg/cache", "pkg/fuse", "pkg/admin", "pkg/metrics", "pkg/cachestatus",
			"pkg/placement", "pkg/warmupctl", "pkg/orchestrator", goFuse, bbolt}, apiClients...),
	},
	{
		name:     "volume attributes parse into the mount spec",
		from:     []string{"pkg/driver/volumeattr"},
		deny:     append([]string{goFuse, bbolt, csiSpec, grpc}, sdks...),
		allowOwn: []string{"pkg/driver/volumeattr", "pkg/mountspec", "pkg/objstore", "internal/"},
	},
	{
		name:     "a mount spec is data over objstore's configuration",
		from:     []string{"pkg/mountspec"},
		deny:     append(append([]string{goFuse, bbolt, csiSpec, grpc}, sdks...), adapters...),
		allowOwn: []string{"pkg/mountspec", "pkg/objstore", "internal/"},
	},
	{
		name:     "the API types stand alone",
		from:     []string{"pkg/api"},
		deny:     append([]string{goFuse, bbolt, csiSpec, grpc}, sdks...),
		allowOwn: []string{"pkg/api"},
	},
	{
		name:     "the admin endpoint serves one cache",
		from:     []string{"pkg/admin"},
		deny:     append([]string{goFuse, csiSpec, grpc}, apiClients...),
		allowOwn: []string{"pkg/admin", "pkg/cache", "pkg/mountspec", "pkg/objstore", "internal/"},
	},
	{
		name:     "metrics collect from a FUSE process's parts and admin sockets",
		from:     []string{"pkg/metrics"},
		deny:     append([]string{csiSpec}, apiClients...),
		allowOwn: []string{"pkg/metrics", "pkg/admin", "pkg/cache", "pkg/fuse", "pkg/mountspec", "pkg/objstore", "internal/"},
	},
	{
		name:     "cache status reads usage files, never the cache",
		from:     []string{"pkg/cachestatus"},
		deny:     append([]string{bbolt, goFuse, csiSpec}, sdks...),
		allowOwn: []string{"pkg/cachestatus", "pkg/api", "internal/"},
	},
	{
		name:     "placement reads API objects and volume attributes",
		from:     []string{"pkg/placement"},
		deny:     append(append([]string{bbolt, goFuse, csiSpec}, sdks...), adapters...),
		allowOwn: []string{"pkg/placement", "pkg/api", "pkg/driver/volumeattr", "pkg/mountspec", "pkg/objstore", "internal/"},
	},
	{
		name:     "the Warmup controller runs the engine in pods",
		from:     []string{"pkg/warmupctl"},
		deny:     append([]string{bbolt, goFuse, csiSpec}, sdks...),
		allowOwn: []string{"pkg/warmupctl", "pkg/api", "pkg/warmup", "internal/"},
	},
	{
		name:     "the orchestrator works on API objects only",
		from:     []string{"pkg/orchestrator"},
		deny:     append(append([]string{bbolt, goFuse, csiSpec, grpc}, sdks...), adapters...),
		allowOwn: []string{"pkg/orchestrator", "pkg/api", "pkg/cachestatus", "pkg/placement", "pkg/warmupctl", "pkg/warmup", "pkg/driver/volumeattr", "pkg/mountspec", "pkg/objstore", "internal/"},
	},
	{
		name:     "the tier sweep lists and deletes tier objects, never a cache or a mount",
		from:     []string{"pkg/tiersweep"},
		deny:     append([]string{goFuse, bbolt, csiSpec}, apiClients...),
		allowOwn: []string{"pkg/tiersweep", "pkg/cache/tier", "pkg/mountspec", "pkg/objstore", "internal/"},
	},
	{
		name:     "leaves import no layer",
		from:     []string{"internal/", "pkg/warmup"},
		allowOwn: []string{"internal/", "pkg/warmup"},
	},
	{
		name: "nothing imports a command, a benchmark or a test",
		from: []string{"pkg/", "internal/"},
		deny: topLevel,
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

// goList returns the module's packages, each with its non-test
// dependencies (as the binaries link them).
func goList(t *testing.T) map[string][]string {
	t.Helper()
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
	for _, p := range []string{"pkg/supervisor", "pkg/cache", "pkg/fuse", "pkg/driver", "pkg/objstore", "pkg/orchestrator"} {
		if _, ok := graph[module+p]; !ok {
			t.Fatalf("go list did not list %s: the rules check nothing", p)
		}
	}
	return graph
}

// TestImportGraph: no package of the module depends, directly or not, on
// a layer above it.
func TestImportGraph(t *testing.T) {
	for _, v := range violations(goList(t), layerRules) {
		t.Error(v)
	}
}

// ruled reports whether a rule constrains pkg, or pkg is a command,
// benchmark or test (which nothing may import).
func ruled(pkg string, rules []layerRule) bool {
	return anyUnder(pkg, topLevel) || slices.ContainsFunc(rules, func(r layerRule) bool {
		return r.name != rules[len(rules)-1].name && anyUnder(pkg, r.from)
	})
}

// TestEveryPackageRuled: every package of the module is in a rule of its
// own layer (not only in the catch-all against importing commands), so a
// new package needs a rule before it lands.
func TestEveryPackageRuled(t *testing.T) {
	for _, pkg := range slices.Sorted(maps.Keys(goList(t))) {
		if !ruled(pkg, layerRules) {
			t.Errorf("%s is in no import rule: add one to layerRules (and a plant to rulePlants)", strings.TrimPrefix(pkg, module))
		}
	}
	if ruled(module+"pkg/brandnew", layerRules) {
		t.Error("a package no rule names counts as ruled")
	}
}

// plant is a dependency that breaks a rule: pkg depends, maybe through
// via, on dep.
type plant struct{ pkg, dep string }

// rulePlants holds, for each rule by name, back-imports it must catch:
// what each package must never depend on, directly or through another
// package. TestImportRulesCatchViolations plants each into a synthetic
// graph, so every rule stays proven to fail.
var rulePlants = map[string][]plant{
	"objstore is the bottom layer (SDKs only)":                                {{"pkg/objstore/s3store", "pkg/cache"}, {"pkg/objstore", bbolt}},
	"the cache sits on objstore alone":                                        {{"pkg/cache", "pkg/fuse"}, {"pkg/cache", "pkg/supervisor"}},
	"fuse sits on the cache and objstore":                                     {{"pkg/fuse", "pkg/driver"}, {"pkg/fuse", grpc}},
	"the takeover layer wraps go-fuse's protocol, never the file system":      {{"pkg/fuse/takeover", "pkg/cache"}, {"pkg/fuse/takeover", "github.com/hanwen/go-fuse/v2/fs"}, {"pkg/fuse/takeover", "pkg/fuse"}},
	"the supervisor starts FUSE processes and never links their code":         {{"pkg/supervisor", "pkg/fuse"}, {"pkg/fdholder", bbolt}},
	"the node plugin reaches FUSE processes through the supervisor":           {{"pkg/driver", "pkg/metrics"}, {"pkg/driver", "pkg/cachestatus"}, {"pkg/driver/nodestate", "sigs.k8s.io/controller-runtime/pkg/client"}},
	"volume attributes parse into the mount spec":                             {{"pkg/driver/volumeattr", "github.com/hanwen/go-fuse/v2/fuse"}, {"pkg/driver/volumeattr", "pkg/driver/nodestate"}},
	"a mount spec is data over objstore's configuration":                      {{"pkg/mountspec", "pkg/cache"}, {"pkg/mountspec", "pkg/objstore/s3store"}, {"pkg/mountspec", "pkg/driver/volumeattr"}},
	"the API types stand alone":                                               {{"pkg/api/v1alpha1", "pkg/warmup"}, {"pkg/api/v1alpha1", "internal/owned"}},
	"the admin endpoint serves one cache":                                     {{"pkg/admin", "pkg/fuse"}, {"pkg/admin", "pkg/metrics"}, {"pkg/admin", "k8s.io/client-go/kubernetes"}},
	"metrics collect from a FUSE process's parts and admin sockets":           {{"pkg/metrics", "pkg/driver"}, {"pkg/metrics", "pkg/supervisor"}},
	"cache status reads usage files, never the cache":                         {{"pkg/cachestatus", "pkg/cache"}, {"pkg/cachestatus", "go.etcd.io/bbolt/errors"}, {"pkg/cachestatus", "pkg/driver"}},
	"placement reads API objects and volume attributes":                       {{"pkg/placement", "pkg/cache"}, {"pkg/placement", "pkg/objstore/backend"}, {"pkg/placement", "pkg/warmupctl"}},
	"the Warmup controller runs the engine in pods":                           {{"pkg/warmupctl", "pkg/driver"}, {"pkg/warmupctl", "pkg/cachestatus"}},
	"the orchestrator works on API objects only":                              {{"pkg/orchestrator", "pkg/cache"}, {"pkg/orchestrator", bbolt}, {"pkg/orchestrator", "pkg/objstore/s3store"}, {"pkg/orchestrator", "pkg/driver"}},
	"the tier sweep lists and deletes tier objects, never a cache or a mount": {{"pkg/tiersweep", "pkg/metrics"}, {"pkg/tiersweep", "pkg/cache"}, {"pkg/tiersweep", "sigs.k8s.io/controller-runtime/pkg/client"}},
	"leaves import no layer":                                                  {{"internal/regfile", "pkg/objstore"}, {"pkg/warmup", "pkg/api/v1alpha1"}},
	"nothing imports a command, a benchmark or a test":                        {{"pkg/cache", "tests/chaos"}, {"internal/bdi", "cmd/csi-driver"}, {"pkg/warmup", "bench/report"}},
}

// TestImportRulesCatchViolations: each rule reports each of its plants,
// also when the planted package is reached only through another package
// (as go list's Deps show an indirect import); every rule has plants; and
// the checker passes a clean graph.
func TestImportRulesCatchViolations(t *testing.T) {
	clean := map[string][]string{
		module + "pkg/supervisor":   {module + "pkg/objstore", module + "pkg/fdholder", "golang.org/x/sys/unix"},
		module + "pkg/fuse":         {module + "pkg/cache", module + "pkg/objstore", "github.com/hanwen/go-fuse/v2/fs"},
		module + "pkg/orchestrator": {module + "pkg/cachestatus", module + "internal/cacheusage", module + "pkg/api/v1alpha1", "sigs.k8s.io/controller-runtime"},
		module + "pkg/cachestatus":  {module + "internal/cacheusage", module + "internal/atomicfile", module + "pkg/api/v1alpha1"},
	}
	if v := violations(clean, layerRules); len(v) != 0 {
		t.Errorf("clean graph: %v", v)
	}
	for _, r := range layerRules {
		plants := rulePlants[r.name]
		if len(plants) == 0 {
			t.Errorf("rule %q has no plant in rulePlants: it is not shown to catch anything", r.name)
		}
		for _, p := range plants {
			// p.dep reached through a package of the module that the
			// rule allows, as a planted import in that package would be.
			via := module + "internal/atomicfile"
			graph := map[string][]string{full(p.pkg): {via, full(p.dep)}}
			want := fmt.Sprintf("%s depends on %s: %s", p.pkg, p.dep, r.name)
			if v := violations(graph, layerRules); !slices.Contains(v, want) {
				t.Errorf("planted %s → %s: rule %q silent (got %q)", p.pkg, p.dep, r.name, v)
			}
		}
	}
	for name := range rulePlants {
		if !slices.ContainsFunc(layerRules, func(r layerRule) bool { return r.name == name }) {
			t.Errorf("rulePlants names no rule: %q", name)
		}
	}
}
