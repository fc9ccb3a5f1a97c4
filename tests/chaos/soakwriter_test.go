package chaos

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The soak's writer child (writerSpec.Soak): four threads under Dir, each
// a way applications write, and each acknowledged change printed at once
// (ack) so that the soak finds it in the bucket:
//   - ckpt: a 2 MiB checkpoint replaced in place (O_TRUNC), in 256 KiB
//     writes, fsync halfway, close; three names in turn;
//   - rename: the same saved under a temporary name of its own, then
//     renamed over the checkpoint;
//   - append: records of 4–64 KiB appended (O_APPEND) to a log, one open
//     and close each, read back after each close; a new log every 2 MiB;
//   - small: files of 1–64 KiB created (O_EXCL), read back, and removed
//     once 50 newer ones were created.
// Every content is content(seed, size): the soak computes it again.

// Sizes of the soak writer's files.
const (
	soakCkptSize  = 2 << 20
	soakCkptPiece = 256 << 10
	soakAppendMax = 2 << 20
	soakSmallKeep = 50
)

// ack is one acknowledged change: once Op returned success, the bucket
// holds Name with content(Seed, Size)[:Len] (or a later acknowledged
// version), or, Deleted, nothing under Name.
type ack struct {
	Op      string // close, fsync, rename, unlink
	Name    string // relative to the writer's Dir
	Seed    uint64
	Size    int
	Len     int
	Deleted bool `json:",omitempty"`
	// Maybe: the unlink failed, so the bucket holds either nothing or
	// content(Seed, Size)[:Len].
	Maybe bool `json:",omitempty"`
	At    int64
}

// soakSeed is the seed of a soak writer's content: volume, thread, file.
func soakSeed(volume, thread int, n uint64) uint64 {
	return uint64(volume)<<48 | uint64(thread)<<40 | n
}

// writeSoak runs the four threads until stdin closes.
func writeSoak(spec writerSpec) int {
	stop := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(stop) }()
	stats := newStatsPrinter(true)
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	// do times f as one operation of kind.
	do := func(kind string, n int64, f func() error) error {
		start := time.Now()
		err := f()
		op := opRecord{Start: start.UnixNano(), End: time.Now().UnixNano()}
		if err != nil {
			op.Err = err.Error()
		}
		stats.add(kind, op, n)
		return err
	}
	// pause after a failure, so that a broken mount is not a busy loop.
	pause := func(err error) bool {
		if err != nil {
			time.Sleep(100 * time.Millisecond)
		}
		return err != nil
	}
	dir := func(name string) string { return filepath.Join(spec.Dir, name) }
	for _, d := range []string{"ckpt", "rename", "append", "small"} {
		_ = do("mkdir", 0, func() error { return os.MkdirAll(dir(d), 0o755) })
	}
	threads := []func(th int){
		func(th int) { // ckpt
			for n := uint64(0); !stopped(); n++ {
				name := fmt.Sprintf("ckpt/ckpt-%d.pt", n%3)
				seed := soakSeed(spec.Volume, th, n)
				if pause(soakCheckpoint(dir(name), name, seed, true, do, stats)) {
					continue
				}
				stats.ack(ack{Op: "close", Name: name, Seed: seed, Size: soakCkptSize, Len: soakCkptSize, At: time.Now().UnixNano()})
			}
		},
		func(th int) { // rename
			for n := uint64(0); !stopped(); n++ {
				name := fmt.Sprintf("rename/ckpt-%d.pt", n%3)
				tmp := fmt.Sprintf("%s.tmp%d", name, n)
				seed := soakSeed(spec.Volume, th, n)
				err := soakCheckpoint(dir(tmp), tmp, seed, false, do, stats)
				if err == nil {
					err = do("rename", 0, func() error { return os.Rename(dir(tmp), dir(name)) })
				}
				if pause(err) {
					continue
				}
				stats.ack(ack{Op: "rename", Name: name, Seed: seed, Size: soakCkptSize, Len: soakCkptSize, At: time.Now().UnixNano()})
			}
		},
		func(th int) { // append
			rng := rand.New(rand.NewPCG(uint64(spec.Volume), uint64(th)))
			for k := uint64(0); !stopped(); k++ {
				name := fmt.Sprintf("append/log-%d", k)
				seed := soakSeed(spec.Volume, th, k)
				data := content(seed, soakAppendMax)
				for l := 0; !stopped(); {
					n := 4<<10 + rng.IntN(60<<10)
					if l+n > len(data) {
						break
					}
					err := do("append", int64(n), func() error { return soakAppend(dir(name), data[l:l+n]) })
					if pause(err) {
						// Whether it landed is unknown: start a new log.
						break
					}
					l += n
					stats.ack(ack{Op: "close", Name: name, Seed: seed, Size: soakAppendMax, Len: l, At: time.Now().UnixNano()})
					_ = do("readback", int64(l), func() error { return readBack(dir(name), data[:l]) })
				}
			}
		},
		func(th int) { // small
			rng := rand.New(rand.NewPCG(uint64(spec.Volume), uint64(th)))
			type small struct {
				name  string
				seed  uint64
				size  int
				tried bool // an unlink failed: it may have taken effect
			}
			var kept []small // created, not removed yet
			for n := uint64(0); !stopped(); n++ {
				name := fmt.Sprintf("small/f-%d.bin", n)
				seed := soakSeed(spec.Volume, th, n)
				size := 1<<10 + rng.IntN(63<<10)
				data := content(seed, size)
				err := do("create", int64(size), func() error { return soakCreate(dir(name), data) })
				if pause(err) {
					continue
				}
				stats.ack(ack{Op: "close", Name: name, Seed: seed, Size: size, Len: size, At: time.Now().UnixNano()})
				_ = do("readback", int64(size), func() error { return readBack(dir(name), data) })
				if kept = append(kept, small{name: name, seed: seed, size: size}); len(kept) > soakSmallKeep {
					old := kept[0]
					err := do("unlink", 0, func() error {
						err := os.Remove(dir(old.name))
						if errors.Is(err, fs.ErrNotExist) && old.tried {
							// The failed try took effect (a remount
							// failed the call after the server had
							// removed it): done.
							err = nil
						}
						return err
					})
					if err == nil {
						stats.ack(ack{Op: "unlink", Name: old.name, Deleted: true, At: time.Now().UnixNano()})
						kept = kept[1:]
					} else {
						// Removed or not: the bucket may hold either.
						kept[0].tried = true
						stats.ack(ack{Op: "unlink", Name: old.name, Seed: old.seed, Size: old.size, Len: old.size, Deleted: true, Maybe: true, At: time.Now().UnixNano()})
					}
				}
				time.Sleep(time.Duration(rng.IntN(100)) * time.Millisecond)
			}
		},
	}
	var wg sync.WaitGroup
	for th, f := range threads {
		wg.Add(1)
		go func() { defer wg.Done(); f(th) }()
	}
	wg.Wait()
	stats.final()
	return 0
}

// soakCheckpoint writes content(seed, soakCkptSize) to path (O_TRUNC) in
// pieces with an fsync halfway, and closes it; with ackFsync the fsync is
// acknowledged (the bucket then holds the first half).
func soakCheckpoint(path, name string, seed uint64, ackFsync bool, do func(string, int64, func() error) error, stats *statsPrinter) error {
	data := content(seed, soakCkptSize)
	var f *os.File
	err := do("open", 0, func() (err error) {
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		return err
	})
	if err != nil {
		return err
	}
	for off := 0; off < len(data); off += soakCkptPiece {
		end := min(off+soakCkptPiece, len(data))
		err = do("write", int64(end-off), func() error { _, err := f.Write(data[off:end]); return err })
		if err == nil && end == len(data)/2 {
			if err = do("fsync", 0, f.Sync); err == nil && ackFsync {
				stats.ack(ack{Op: "fsync", Name: name, Seed: seed, Size: soakCkptSize, Len: end, At: time.Now().UnixNano()})
			}
		}
		if err != nil {
			_ = f.Close()
			return err
		}
	}
	return do("close", 0, f.Close)
}

// soakAppend appends b to path in one open, write and close.
func soakAppend(path string, b []byte) error {
	return soakWrite(path, os.O_APPEND, b)
}

// soakCreate creates path (O_EXCL) with b.
func soakCreate(path string, b []byte) error {
	return soakWrite(path, os.O_EXCL, b)
}

// soakWrite opens path for writing, created if absent, with the extra
// flag, writes b and closes it.
func soakWrite(path string, flag int, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|flag, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// errReadBack: a file read back after its close differs from what was
// written.
var errReadBack = errors.New("read back differs from what was written")

// readBack reads path and compares it with want.
func readBack(path string, want []byte) error {
	got, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%s: %w (%d bytes, want %d)", path, errReadBack, len(got), len(want))
	}
	return nil
}
