package conventions

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// helperDir is the one package whose helpers may skip a test: they skip on
// a developer machine and fail under CI=true (testserver.Unavailable), or
// skip what only its own make target runs (OptIn) or -short (SkipShort).
const helperDir = "internal/testserver"

// skipCalls returns the positions of calls to a Skip, Skipf or SkipNow
// method in src.
func skipCalls(fset *token.FileSet, name string, src any) ([]token.Position, error) {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []token.Position
	ast.Inspect(f, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
				switch sel.Sel.Name {
				case "Skip", "Skipf", "SkipNow":
					out = append(out, fset.Position(call.Pos()))
				}
			}
		}
		return true
	})
	return out, nil
}

// TestNoTestSkipsOnItsOwn: no test file outside internal/testserver calls
// Skip, Skipf or SkipNow; a test that cannot run asks testserver
// (RequireFUSE, RequireRoot, RequireBinary, Unavailable, OptIn, SkipShort).
func TestNoTestSkipsOnItsOwn(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if name := d.Name(); rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
				name == "testdata" || name == "vendor" || filepath.ToSlash(rel) == helperDir) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		calls, err := skipCalls(fset, path, nil)
		if err != nil {
			return err
		}
		for _, p := range calls {
			t.Errorf("%s:%d: skips on its own; use internal/testserver (Unavailable fails under CI=true)", rel, p.Line)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("found %d test files under %s: the walk missed the repository", files, root)
	}
}

// TestSkipCallsFound: the scan finds every form of skip.
func TestSkipCallsFound(t *testing.T) {
	src := `package p
import "testing"
func TestA(t *testing.T) { t.Skip("x") }
func TestB(t *testing.T) { if true { t.Skipf("%d", 1) } }
func BenchmarkC(b *testing.B) { b.SkipNow() }
func helper(tb testing.TB) { defer tb.Skip() }
func TestD(t *testing.T) { t.Log("Skip") }
`
	calls, err := skipCalls(token.NewFileSet(), "p_test.go", src)
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, c := range calls {
		lines = append(lines, c.Line)
	}
	if want := []int{3, 4, 5, 6}; !slices.Equal(lines, want) {
		t.Errorf("skip calls on lines %v, want %v", lines, want)
	}
}
