package fuse

import (
	"github.com/basin-csi/basin/pkg/mountspec"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/posixtest"
)

// posixCases are the go-fuse posixtest cases that make sense for object
// storage. Left out: hard links, symlinks, xattrs, fallocate, locks
// forwarded to the server, SEEK_HOLE/SEEK_DATA, O_DIRECT and the symlink
// race.
var posixCases = []string{
	"AppendWrite",
	"DirSeek",
	"FdLeak",
	"FileBasic",
	"FileLarge",
	"FstatDeleted",
	"MkdirRmdir",
	"NlinkZero",
	"OpenAt",
	"ParallelFileOpen",
	"ReadDirBasic",
	"ReadDirConsistency",
	"RenameOpenDir",
	"RenameOverwriteDestExist",
	"RenameOverwriteDestNoExist",
	"TruncateFile",
	"TruncateNoFile",
}

func TestPosix(t *testing.T) {
	for _, kind := range []cacheKind{realCache, fakeLocal} {
		for _, name := range posixCases {
			fn, ok := posixtest.All[name]
			if !ok {
				t.Fatalf("posixtest has no case %q", name)
			}
			t.Run(string(kind)+"/"+name, func(t *testing.T) {
				store, _ := newFileStore(t)
				// FileBasic expects the mode it created the file with.
				m := mountStore(t, store, mountSpec{cache: kind, cfg: Config{Spec: mountspec.Spec{FileMode: 0o755}}})
				done := make(chan struct{})
				go func() {
					defer close(done)
					t.Run("case", func(t *testing.T) { fn(t, m.dir) })
				}()
				select {
				case <-done:
				case <-time.After(2 * syscallTimeout):
					t.Fatalf("%s hung", name)
				}
			})
		}
	}
}
