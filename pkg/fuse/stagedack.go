package fuse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/internal/atomicfile"
)

// Acknowledged staged files (uploadMode: async). A close is acknowledged
// once its staged file (stagedwrites.go) is fdatasync'ed and a note
// "<ino>.<gen>.ack" is written durably next to it (temporary file, fsync,
// rename, fsync of the directory): the key, the size and the metadata of
// the upload. A note, and not a rename of the staged file to another
// suffix, because the successor needs more than the content: the key
// (the cache's inode table may not have committed a name created just
// before a crash) and the metadata (an executable's mode, a recorded
// mtime), which a name cannot carry; and the staged file keeps its name
// and descriptor while later opens read it and its writer state stays.
//
// Invariants:
//
//   - a note exists only while its staged file holds exactly the content
//     the close acknowledged: a change of an acknowledged file first
//     uploads it (which removes the note), and an unlink removes both;
//   - an acknowledged staged file is the newest staged file of its inode:
//     a new write state of the inode is made only when the old one has
//     finished, which its pending upload prevents.
//
// A process that starts on the volume's cache (a successor after a kill,
// or the next mount after an unmount that gave up) uploads every staged
// file whose note matches it, in the background (recoveredFile), whether
// or not the dead process's open files are inherited: the content is
// complete, which an inherited writer's staged file need not be. Until
// then an operation on its key (lookup, a listing entry, create, open for
// writing, unlink, rename), a listing of its directory, and a rename or
// removal of a directory above it upload it first, or wait for the upload
// under way (settle.go), so nobody sees or changes the older object or
// misses the file. An unacknowledged staged file is never uploaded by a
// successor (the scan removes it, or keeps it for an inherited writer, as
// in sync mode).

// ackSuffix ends the name of an acknowledgement note.
const ackSuffix = ".ack"

// ackNote is what an acknowledgement note holds.
type ackNote struct {
	Key  string            `json:"key"`
	Size int64             `json:"size"`
	Meta map[string]string `json:"meta,omitempty"`
	// ClaimToken: created with O_EXCL and never uploaded, its upload is
	// the claim with this token (exclusiveupload.go).
	ClaimToken string `json:"claimToken,omitempty"`
}

// writeAck writes the note of the staged file at staged, durably.
func writeAck(staged string, note ackNote) (string, error) {
	data, err := json.Marshal(note)
	if err != nil {
		return "", err
	}
	path := staged + ackSuffix
	if err := atomicfile.WriteFile(path, data, 0o600, atomicfile.Durable); err != nil {
		return "", fmt.Errorf("acknowledge staged file: %w", err)
	}
	return path, nil
}

// readAck reads a note.
func readAck(path string) (ackNote, error) {
	var note ackNote
	data, err := os.ReadFile(path)
	if err != nil {
		return note, err
	}
	if err := json.Unmarshal(data, &note); err != nil {
		return note, fmt.Errorf("acknowledgement note %s: %w", path, err)
	}
	if note.Key == "" || note.Size < 0 {
		return note, fmt.Errorf("acknowledgement note %s: no key or a negative size", path)
	}
	return note, nil
}

// removeAck removes a note; the staged file then counts as not
// acknowledged.
func removeAck(path string) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		klog.ErrorS(err, "removing an acknowledgement note", "path", path)
	}
}

// recoveredFile is a staged file a previous process acknowledged and did
// not upload.
type recoveredFile struct {
	// constant
	f    *FS
	path string // the staged file; its note is path+ackSuffix
	note ackNote

	mu   sync.Mutex
	done bool // guarded by mu
}

func (r *recoveredFile) name() string { return r.note.Key }
func (r *recoveredFile) finished()    {}

func (r *recoveredFile) flush(ctx context.Context) error {
	_, err := r.run(ctx)
	return err
}

// settle uploads the file now, or waits for its upload under way.
func (r *recoveredFile) settle(ctx context.Context) (bool, error) {
	_, err := r.run(ctx)
	return true, err
}

// run uploads the file, records the new object in the cache and removes
// the staged file and its note.
func (r *recoveredFile) run(ctx context.Context) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return true, nil
	}
	f, key, size := r.f, r.note.Key, r.note.Size
	file, err := os.Open(r.path)
	if err != nil {
		return false, fmt.Errorf("acknowledged staged file: %w", err)
	}
	defer func() { _ = file.Close() }()
	if fi, err := file.Stat(); err != nil || fi.Size() != r.note.Size {
		// Not the content that was acknowledged (it cannot be, by the
		// invariants): never upload it over the object.
		klog.ErrorS(err, "an acknowledged staged file does not match its note; not uploading it", "volume", f.cfg.VolumeID, "key", key, "path", r.path)
		removeAck(r.path + ackSuffix)
		r.finishLocked()
		return true, nil
	}
	uctx, cancel := f.transferContext(ctx, size)
	defer cancel()
	info, err := f.putStaged(uctx, key, file, size, r.note.Meta, r.note.ClaimToken)
	if err != nil {
		return false, fmt.Errorf("upload %s: %w", key, err)
	}
	info.Key, info.Size = key, size
	info.Metadata = r.note.Meta
	if info.Metadata == nil {
		info.Metadata = map[string]string{}
	}
	if info.ModTime.IsZero() {
		info.ModTime = time.Now()
	}
	f.cache.Wrote(info)
	removeAck(r.path + ackSuffix)
	if err := os.Remove(r.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		klog.ErrorS(err, "removing an uploaded staged file", "path", r.path)
	}
	f.counters.uploads.Add(1)
	f.counters.uploadBytes.Add(size)
	f.uploads.recovered.Add(1)
	klog.InfoS("uploaded a file the previous process acknowledged", "volume", f.cfg.VolumeID, "key", key, "size", size)
	r.finishLocked()
	return true, nil
}

func (r *recoveredFile) finishLocked() {
	r.done = true
	r.f.acked.forget(r.note.Key, r)
	r.f.uploads.release(r.note.Size)
}

// recover queues the uploads of the acknowledged staged files the scan
// found (stagedwrites.go).
func (f *FS) recover(acked []ackedFile) {
	for _, a := range acked {
		r := &recoveredFile{f: f, path: a.path, note: a.note}
		f.acked.add(a.note.Key, r)
		f.uploads.reserveAlways(a.note.Size)
		f.uploads.enqueue(r)
	}
	if len(acked) > 0 {
		klog.InfoS("uploading the files the previous process acknowledged", "volume", f.cfg.VolumeID, "files", len(acked))
	}
}

// isAckName reports whether name is an acknowledgement note, and
// returns the staged file's name.
func isAckName(name string) (string, bool) {
	return strings.CutSuffix(name, ackSuffix)
}
