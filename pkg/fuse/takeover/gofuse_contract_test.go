package takeover

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
)

// The go-fuse contract of the takeover (initrecord.go, rawfs.go).
//
// Resuming a live kernel connection uses go-fuse in ways its API does not
// promise: NewProtocolServer and ProtocolServer.HandleRequest are marked
// EXPERIMENTAL, the session record stores go-fuse's InitIn as raw bytes,
// the successor relies on NewServer answering INIT on a /dev/fd/N
// descriptor before it returns and reading nothing more until Serve, on
// go-fuse reading from that very descriptor number (dup3 swaps the live
// connection in under it), and on sessionFS overriding RawFileSystem
// methods with exactly go-fuse's signatures (a changed signature would
// silently bypass the shim). The tests in this file and in
// gofuse_handshake_test.go pin each of these without root, so that a
// go-fuse upgrade that changes one fails here, naming it, instead of in a
// takeover in production; gofuse_live_test.go repeats the handshake on a
// real kernel connection (root and /dev/fuse). The end-to-end takeover
// under load is tests/chaos (TestTakeoverCompletesInFlightRead,
// TestHungProcessIsReplaced).
//
// When one of these fails after an upgrade: read the new go-fuse code the
// message names, adapt this package, and update the expected
// value here. A changed INIT reply (layouts, negotiated flags) is safe but
// makes the first takeover after the rollout a remount: say so in the
// release notes.

// TestGoFuseSignatures: the go-fuse functions the takeover calls.
func TestGoFuseSignatures(t *testing.T) {
	for _, c := range []struct {
		name string
		fn   any
		want string
		uses string
	}{
		{"fuse.NewServer", gofuse.NewServer,
			"func(fuse.RawFileSystem, string, *fuse.MountOptions) (*fuse.Server, error)",
			"resumeServer: a server on a /dev/fd/N socket that answers the recorded INIT"},
		{"fuse.NewProtocolServer (EXPERIMENTAL)", gofuse.NewProtocolServer,
			"func(fuse.RawFileSystem, *fuse.MountOptions) *fuse.ProtocolServer",
			"initReply: the INIT reply recorded for a successor"},
		{"(*fuse.ProtocolServer).HandleRequest (EXPERIMENTAL)", (*gofuse.ProtocolServer).HandleRequest,
			"func(*fuse.ProtocolServer, [][]uint8, [][]uint8) (int, fuse.Status)",
			"initReply"},
		{"(*fuse.Server).KernelSettings", (*gofuse.Server).KernelSettings,
			"func(*fuse.Server) *fuse.InitIn",
			"writeSessionRecord: the kernel's INIT, recorded as raw bytes"},
		{"(*fuse.Server).UnregisterBackingFd", (*gofuse.Server).UnregisterBackingFd,
			"func(*fuse.Server, int32) syscall.Errno",
			"unregisterWith: releasing inherited passthrough backing IDs"},
		{"(*fuse.Server).Serve", (*gofuse.Server).Serve,
			"func(*fuse.Server)",
			"serving after the dup3 of the live descriptor"},
	} {
		if got := reflect.TypeOf(c.fn).String(); got != c.want {
			t.Errorf("go-fuse changed %s (used by %s):\n  was %s\n  now %s", c.name, c.uses, c.want, got)
		}
	}
}

// layout describes a struct's fields with their types and offsets.
func layout(v any) (fields []string, size uintptr) {
	ty := reflect.TypeOf(v)
	for i := range ty.NumField() {
		f := ty.Field(i)
		fields = append(fields, fmt.Sprintf("%s %s @%d", f.Name, f.Type, f.Offset))
	}
	return fields, ty.Size()
}

// TestGoFuseLayouts: the wire structs the takeover reads, writes or
// records byte for byte. Their layout is the kernel's ABI, so a change
// means go-fuse now speaks another protocol version: records written by
// the previous release no longer match (InitIn), and initrecord.go's headers
// would be wrong (InHeader, OutHeader).
func TestGoFuseLayouts(t *testing.T) {
	for _, c := range []struct {
		name   string
		v      any
		size   uintptr
		fields []string
		uses   string
	}{
		{"fuse.InHeader", gofuse.InHeader{}, 40, []string{
			"Length uint32 @0", "Opcode uint32 @4", "Unique uint64 @8", "NodeId uint64 @16",
			"Caller fuse.Caller @24", "TotalExtlen uint16 @36", "Padding uint16 @38",
		}, "initRequest writes it over the recorded INIT"},
		{"fuse.OutHeader", gofuse.OutHeader{}, 16, []string{
			"Length uint32 @0", "Status int32 @4", "Unique uint64 @8",
		}, "checkInitReply reads it; notifyResend writes it"},
		{"fuse.InitIn", gofuse.InitIn{}, 104, []string{
			"InHeader fuse.InHeader @0", "Major uint32 @40", "Minor uint32 @44", "MaxReadAhead uint32 @48",
			"Flags uint32 @52", "Flags2 uint32 @56", "Unused [11]uint32 @60",
		}, "the session record stores it as raw bytes (sessionRecord.InitIn)"},
		{"fuse.InitOut", gofuse.InitOut{}, 64, []string{
			"Major uint32 @0", "Minor uint32 @4", "MaxReadAhead uint32 @8", "Flags uint32 @12",
			"MaxBackground uint16 @16", "CongestionThreshold uint16 @18", "MaxWrite uint32 @20",
			"TimeGran uint32 @24", "MaxPages uint16 @28", "MapAlignment uint16 @30", "Flags2 uint32 @32",
			"MaxStackDepth uint32 @36", "RequestTimeout uint16 @40", "_Unused [11]uint16 @42",
		}, "the session record compares the reply byte for byte (sessionRecord.InitOut)"},
	} {
		fields, size := layout(c.v)
		if size != c.size || !slices.Equal(fields, c.fields) {
			t.Errorf("go-fuse changed the layout of %s (%s):\n  was %d bytes: %s\n  now %d bytes: %s",
				c.name, c.uses, c.size, strings.Join(c.fields, ", "), size, strings.Join(fields, ", "))
		}
	}
}

// TestGoFuseConstants: kernel ABI values the takeover uses, as go-fuse
// names them, against the values of the kernel's uapi/linux/fuse.h.
func TestGoFuseConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int64
		uses      string
	}{
		{"FUSE_NOTIFY_RESEND (go-fuse: -NOTIFY_RESEND)", -int64(gofuse.NOTIFY_RESEND), notifyCode, "notifyResend"},
		{"FUSE_INIT (initrecord.go: opInit)", opInit, 26, "initRequest"},
		{"FUSE_ROOT_ID", gofuse.FUSE_ROOT_ID, 1, "sessionFS.node never revives the root"},
		{"FOPEN_DIRECT_IO", gofuse.FOPEN_DIRECT_IO, 1 << 0, "sessionFS.opened"},
		{"FOPEN_KEEP_CACHE", gofuse.FOPEN_KEEP_CACHE, 1 << 1, "sessionFS.opened"},
		{"FOPEN_PASSTHROUGH", gofuse.FOPEN_PASSTHROUGH, 1 << 7, "sessionFS.opened: inherited passthrough opens"},
		{"FUSE_GETATTR_FH", gofuse.FUSE_GETATTR_FH, 1 << 0, "sessionFS.GetAttr: inherited handles"},
		{"FATTR_FH", gofuse.FATTR_FH, 1 << 6, "sessionFS.SetAttr: inherited handles"},
	} {
		if c.got != c.want {
			t.Errorf("%s is %d, want %d (used by %s)", c.name, c.got, c.want, c.uses)
		}
	}
	if s := gofuse.Status(-notifyCode).String(); s != "NOTIFY_RESEND" {
		t.Errorf("go-fuse names notification %d %q, want NOTIFY_RESEND", notifyCode, s)
	}
}

// TestSessionFSOverridesRawFileSystem: every exported method sessionFS
// defines overrides a RawFileSystem method with go-fuse's
// exact signature. A re-typed method fails to compile (sessionFS would no
// longer be a RawFileSystem), but a method go-fuse renamed or dropped
// would silently never be called: requests would go straight to the
// bridge, past the handle encoding, the revival of unknown nodes and the
// lookup counts of a resumed session.
func TestSessionFSOverridesRawFileSystem(t *testing.T) {
	own := sessionFSMethods(t)
	if len(own) < 20 {
		t.Fatalf("found %d exported sessionFS methods (%v); the shim has more than 20", len(own), own)
	}
	raw := reflect.TypeOf((*gofuse.RawFileSystem)(nil)).Elem()
	shim := reflect.TypeOf(&sessionFS{})
	for _, name := range own {
		want, ok := raw.MethodByName(name)
		if !ok {
			t.Errorf("go-fuse's RawFileSystem has no method %s any more: sessionFS.%s is never called", name, name)
			continue
		}
		m, _ := shim.MethodByName(name)
		in := make([]reflect.Type, 0, m.Type.NumIn()-1)
		for j := 1; j < m.Type.NumIn(); j++ { // without the receiver
			in = append(in, m.Type.In(j))
		}
		out := make([]reflect.Type, m.Type.NumOut())
		for j := range out {
			out[j] = m.Type.Out(j)
		}
		if got := reflect.FuncOf(in, out, m.Type.IsVariadic()); got != want.Type {
			t.Errorf("go-fuse changed RawFileSystem.%s:\n  sessionFS has %s\n  go-fuse wants %s", name, got, want.Type)
		}
	}
}

// sessionFSMethods lists the exported methods declared on *sessionFS in
// this package's files.
func sessionFSMethods(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || !fd.Name.IsExported() {
				continue
			}
			if star, ok := fd.Recv.List[0].Type.(*ast.StarExpr); ok {
				if id, ok := star.X.(*ast.Ident); ok && id.Name == "sessionFS" {
					names = append(names, fd.Name.Name)
				}
			}
		}
	}
	return names
}
