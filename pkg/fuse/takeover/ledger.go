package takeover

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/internal/atomicfile"
)

// The I/O mode ledger: every open and release of a file in passthrough or
// cached mode, appended as it happens, so that a successor learns which
// inodes have open files in which mode (iomode.go). The on-disk format is
// stated in doc.go.

// ioCount is one inode's open files by mode.
type ioCount struct {
	pt, cached int32
	backing    int32 // backing ID of the passthrough opens
}

// A dead process may have recorded an OPEN or a RELEASE and died before
// its reply reached the kernel: the successor gets the same request again
// (resent.go) and must not count it twice (a release counted twice unpins
// an inode the kernel still has open, and the next open in the other mode
// fails with EIO). So every record carries its request's unique, and a
// resent request whose unique the predecessors recorded is answered
// without counting it again.

// ledgerRecord is the on-disk record, little endian: ino (8 bytes),
// backing ID (4), op (1: 1 open, 2 close, ored with opUncounted), mode
// (1), 2 unused, the request's unique without resendBit (8).
const ledgerRecordSize = 24

// legacyRecordSize is the record of ledgers written before uniques were
// (same layout, ending after the mode).
const legacyRecordSize = 16

// opUncounted marks a record of a resent request the predecessors had
// already counted: it changes no count and keeps the unique known to a
// later successor.
const opUncounted = 0x80

// ledgerRecentRecords is how many of a replayed ledger's last records are
// matched against resent requests. A request's record is written just
// before its reply, so one the kernel resends is among the last few.
const ledgerRecentRecords = 4096

// recentOp is what a predecessor recorded for a request.
type recentOp struct {
	ino  uint64
	open bool
	mode ioMode
}

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
	log  klog.Logger

	mu      sync.Mutex // guards the fields below
	f       *os.File
	live    map[uint64]ioCount
	recent  map[uint64]recentOp // unique → the predecessors' record (replay's last records)
	records int
	failed  bool // a write failed (logged once)
	unknown bool // resumed without a ledger: inherited opens are unknown
}

// ledgerPath is the ledger of the connection named session next to the
// session record.
func ledgerPath(sessionFile, session string) string {
	return filepath.Join(filepath.Dir(sessionFile), "fuse-iomodes2-"+session+".log")
}

// legacyLedgerPath is where binaries before ledgerRecordSize's uniques
// kept the ledger (16-byte records): replayed when the ledger is missing,
// for a takeover across an upgrade.
func legacyLedgerPath(path string) string {
	return strings.Replace(path, "fuse-iomodes2-", "fuse-iomodes-", 1)
}

// openLedger opens the connection's ledger. A fresh connection starts an
// empty one (removing those of earlier connections); a resumed one
// replays it and returns the inherited opens.
func openLedger(path string, resume bool, log klog.Logger) (*ioLedger, map[uint64]ioCount, error) {
	l := &ioLedger{path: path, log: log, live: map[uint64]ioCount{}, recent: map[uint64]recentOp{}}
	if !resume {
		old, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "fuse-iomodes*-*.log"))
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

// replay reads the predecessors' records into l.live and the last
// ledgerRecentRecords of them into l.recent.
func (l *ioLedger) replay() error {
	size := ledgerRecordSize
	b, err := os.ReadFile(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		size = legacyRecordSize
		b, err = os.ReadFile(legacyLedgerPath(l.path))
	}
	if errors.Is(err, fs.ErrNotExist) {
		l.log.Info("no I/O mode ledger for this connection: inherited open files are unknown", "path", l.path)
		l.unknown = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("takeover: read the I/O mode ledger: %w", err)
	}
	n := len(b) / size
	for i := 0; i < n; i++ {
		r := b[i*size : (i+1)*size]
		ino := binary.LittleEndian.Uint64(r)
		backing := int32(binary.LittleEndian.Uint32(r[8:]))
		open, mode := r[12]&^opUncounted == 1, ioMode(r[13])
		if r[12]&opUncounted == 0 {
			l.apply(ino, open, mode, backing)
		}
		if size == ledgerRecordSize && i >= n-ledgerRecentRecords {
			if u := binary.LittleEndian.Uint64(r[16:]); u != 0 {
				l.recent[u] = recentOp{ino: ino, open: open, mode: mode}
			}
		}
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

// rewrite replaces the file with the live opens (and the uniques of
// recent, uncounted, for a successor the resent requests reach only
// after this process) and opens it for appending.
func (l *ioLedger) rewrite() error {
	var buf []byte
	for ino, c := range l.live {
		for range c.pt {
			buf = appendRecord(buf, ino, ledgerOp(true), modePassthrough, c.backing, 0)
		}
		for range c.cached {
			buf = appendRecord(buf, ino, ledgerOp(true), modeCached, 0, 0)
		}
	}
	for u, r := range l.recent {
		buf = appendRecord(buf, r.ino, ledgerOp(r.open)|opUncounted, r.mode, 0, u)
	}
	// Not fsynced, like the appended records: the ledger only serves a
	// successor on the same kernel connection, which a machine crash ends.
	if err := atomicfile.WriteFile(l.path, buf, 0o600, atomicfile.NoSync); err != nil {
		return fmt.Errorf("takeover: write the I/O mode ledger: %w", err)
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("takeover: open the I/O mode ledger: %w", err)
	}
	if l.f != nil {
		_ = l.f.Close()
	}
	l.f, l.records = f, len(buf)/ledgerRecordSize
	return nil
}

// ledgerOp is a record's op byte: 1 for an open, 2 for a close.
func ledgerOp(open bool) byte {
	if open {
		return 1
	}
	return 2
}

func appendRecord(b []byte, ino uint64, op byte, mode ioMode, backing int32, unique uint64) []byte {
	var r [ledgerRecordSize]byte
	binary.LittleEndian.PutUint64(r[:], ino)
	binary.LittleEndian.PutUint32(r[8:], uint32(backing))
	r[12], r[13] = op, byte(mode)
	binary.LittleEndian.PutUint64(r[16:], unique&^resendBit)
	return append(b, r[:]...)
}

// recorded reports whether a request is one the kernel resent after the
// predecessors recorded it as an open or close of ino in mode: the kernel
// never saw their reply, and this process's answer stands for it, already
// counted.
func (l *ioLedger) recorded(ino uint64, open bool, mode ioMode, unique uint64) bool {
	if l == nil || unique&resendBit == 0 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.recent[unique&^resendBit]
	return ok && r == recentOp{ino: ino, open: open, mode: mode}
}

// record notes an open or a close of ino in mode by the request unique
// (direct I/O is not recorded: it takes no inode mode); an uncounted one
// (recorded) changes no count.
func (l *ioLedger) record(ino uint64, open bool, mode ioMode, backing int32, unique uint64, counted bool) {
	if l == nil || mode == modeDirect {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	op := ledgerOp(open)
	if counted {
		l.apply(ino, open, mode, backing)
	} else {
		op |= opUncounted
	}
	if l.records >= ledgerCompactAt {
		if err := l.rewrite(); err != nil {
			l.fail(err)
		}
		return
	}
	if _, err := l.f.Write(appendRecord(nil, ino, op, mode, backing, unique)); err != nil {
		l.fail(err)
		return
	}
	l.records++
}

// fail logs the first failed write: a successor may then see wrong modes.
func (l *ioLedger) fail(err error) {
	if !l.failed {
		l.failed = true
		l.log.Error(err, "writing the I/O mode ledger failed; a takeover may refuse some opens", "path", l.path)
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
