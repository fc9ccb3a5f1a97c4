package fuse

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/internal/atomicfile"
)

// The kernel gives an inode one I/O mode at a time: while a file of it is
// open in passthrough mode, every further open must be a passthrough open
// on the same backing file (anything else fails with EIO), and while one
// is open with the page cache, a passthrough open fails. A process that
// takes a connection over cannot see the files its predecessor opened, so
// each process keeps a ledger of its opens by mode in the cache directory
// (one per connection): the successor replays it to learn which inodes
// have inherited opens in which mode, and the backing ID of the
// passthrough ones, which stays registered in the kernel after the
// predecessor's death.

// ioMode is the kernel's I/O mode of an open file.
type ioMode uint64

const (
	modeDirect      ioMode = iota // FOPEN_DIRECT_IO: takes no inode mode
	modePassthrough               // FOPEN_PASSTHROUGH on a backing file
	modeCached                    // the page cache
)

// modeOf is the mode of an open reply.
func modeOf(out *gofuse.OpenOut) ioMode {
	switch {
	case out.OpenFlags&gofuse.FOPEN_PASSTHROUGH != 0:
		return modePassthrough
	case out.OpenFlags&gofuse.FOPEN_DIRECT_IO != 0:
		return modeDirect
	}
	return modeCached
}

// ioCount is one inode's open files by mode.
type ioCount struct {
	pt, cached int32
	backing    int32 // backing ID of the passthrough opens
}

// ledgerRecord is the on-disk record: ino, backing ID, op (1 open, 2
// close) and mode, little endian.
const ledgerRecordSize = 16

// ledgerCompactAt is the record count at which the file is rewritten with
// the live opens only.
const ledgerCompactAt = 1 << 20

// ioLedger is the ledger of one process: appended on every open and
// release of a file in passthrough or cached mode. Appends are plain
// writes (the page cache survives the process; a node crash ends the
// connection anyway).
type ioLedger struct {
	// constant
	path string

	mu      sync.Mutex // guards the fields below
	f       *os.File
	live    map[uint64]ioCount
	records int
	failed  bool // a write failed (logged once)
	unknown bool // resumed without a ledger: inherited opens are unknown
}

// ledgerPath is the ledger of the connection named session next to the
// session record.
func ledgerPath(sessionFile, session string) string {
	return filepath.Join(filepath.Dir(sessionFile), "fuse-iomodes-"+session+".log")
}

// openLedger opens the connection's ledger. A fresh connection starts an
// empty one (removing those of earlier connections); a resumed one
// replays it and returns the inherited opens.
func openLedger(path string, resume bool) (*ioLedger, map[uint64]ioCount, error) {
	l := &ioLedger{path: path, live: map[uint64]ioCount{}}
	if !resume {
		old, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "fuse-iomodes-*.log"))
		for _, p := range old {
			_ = os.Remove(p)
		}
	} else if err := l.replay(); err != nil {
		return nil, nil, err
	}
	inherited := make(map[uint64]ioCount, len(l.live))
	for ino, c := range l.live {
		inherited[ino] = c
	}
	if err := l.rewrite(); err != nil {
		return nil, nil, err
	}
	return l, inherited, nil
}

// replay reads the predecessors' records into l.live.
func (l *ioLedger) replay() error {
	b, err := os.ReadFile(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		klog.InfoS("no I/O mode ledger for this connection: inherited open files are unknown", "path", l.path)
		l.unknown = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("fuse: read the I/O mode ledger: %w", err)
	}
	for ; len(b) >= ledgerRecordSize; b = b[ledgerRecordSize:] {
		ino := binary.LittleEndian.Uint64(b)
		backing := int32(binary.LittleEndian.Uint32(b[8:]))
		l.apply(ino, b[12] == 1, ioMode(b[13]), backing)
	}
	return nil
}

// apply counts one open (or close) of ino in mode. l.mu is held or l is
// not shared yet.
func (l *ioLedger) apply(ino uint64, open bool, mode ioMode, backing int32) {
	c := l.live[ino]
	d := int32(-1)
	if open {
		d = 1
	}
	switch mode {
	case modePassthrough:
		c.pt = max(c.pt+d, 0)
		if open {
			c.backing = backing
		}
	case modeCached:
		c.cached = max(c.cached+d, 0)
	default:
		return
	}
	if c.pt == 0 && c.cached == 0 {
		delete(l.live, ino)
		return
	}
	l.live[ino] = c
}

// rewrite replaces the file with the live opens and opens it for
// appending.
func (l *ioLedger) rewrite() error {
	var buf []byte
	for ino, c := range l.live {
		for range c.pt {
			buf = appendRecord(buf, ino, true, modePassthrough, c.backing)
		}
		for range c.cached {
			buf = appendRecord(buf, ino, true, modeCached, 0)
		}
	}
	// Not fsynced, like the appended records: the ledger only serves a
	// successor on the same kernel connection, which a machine crash ends.
	if err := atomicfile.WriteFile(l.path, buf, 0o600, atomicfile.NoSync); err != nil {
		return fmt.Errorf("fuse: write the I/O mode ledger: %w", err)
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("fuse: open the I/O mode ledger: %w", err)
	}
	if l.f != nil {
		_ = l.f.Close()
	}
	l.f, l.records = f, len(buf)/ledgerRecordSize
	return nil
}

func appendRecord(b []byte, ino uint64, open bool, mode ioMode, backing int32) []byte {
	var r [ledgerRecordSize]byte
	binary.LittleEndian.PutUint64(r[:], ino)
	binary.LittleEndian.PutUint32(r[8:], uint32(backing))
	if open {
		r[12] = 1
	} else {
		r[12] = 2
	}
	r[13] = byte(mode)
	return append(b, r[:]...)
}

// record notes an open or a close of ino in mode (direct I/O is not
// recorded: it takes no inode mode).
func (l *ioLedger) record(ino uint64, open bool, mode ioMode, backing int32) {
	if l == nil || mode == modeDirect {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.apply(ino, open, mode, backing)
	if l.records >= ledgerCompactAt {
		if err := l.rewrite(); err != nil {
			l.fail(err)
		}
		return
	}
	if _, err := l.f.Write(appendRecord(nil, ino, open, mode, backing)); err != nil {
		l.fail(err)
		return
	}
	l.records++
}

// fail logs the first failed write: a successor may then see wrong modes.
func (l *ioLedger) fail(err error) {
	if !l.failed {
		l.failed = true
		klog.ErrorS(err, "writing the I/O mode ledger failed; a takeover may refuse some opens", "path", l.path)
	}
}

// Close closes the file (it stays for a successor).
func (l *ioLedger) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

var _ io.Closer = (*ioLedger)(nil)
