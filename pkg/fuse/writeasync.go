package fuse

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// The write state's side of uploadMode: async (asyncupload.go for the
// queue, stagedack.go for the notes). A close acknowledges the staged
// content and queues one upload job, which holds a reference on the
// state: the state stays the inode's after its handles are released, so
// stat, opens, reads and listings see the written content until it is in
// the bucket, and a later writer shares it. A change of acknowledged
// content (a write, a truncate) first uploads it: the note always
// describes the staged file exactly, and an acknowledged close is never
// undone by a half-done later change that a crash interrupts.

// stageAsync acknowledges the staged content for a close: fdatasync, a
// durable note, and an upload job. It reports false (and does nothing)
// when the close must upload synchronously instead: over the uploader's
// bounds, a streamed upload under way (the rest of a large file), or the
// node's disk refusing the staging; never an error for those.
func (w *writeState) stageAsync(ctx context.Context) (bool, error) {
	f := w.fsys()
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.dirty || w.discard || w.ack != "" {
		return true, nil // nothing new since the last upload or acknowledgement
	}
	if w.up != nil {
		return false, nil
	}
	key, ok := w.node.key()
	if !ok {
		w.discardLocked() // unlinked meanwhile
		return true, nil
	}
	if err := w.ensureFile(ctx, true); err != nil {
		return false, err
	}
	size := w.size.Load()
	if !f.uploads.reserve(size) {
		return false, nil
	}
	path, err := w.syncAndNoteLocked(key, size)
	if err != nil {
		f.uploads.release(size)
		klog.V(2).InfoS("staging a closed file failed; uploading it now", "volume", f.cfg.VolumeID, "key", key, "err", err)
		return false, nil
	}
	w.ack, w.ackSize, w.ackKey = path, size, key
	f.acked.add(key, w)
	if !w.queued.Load() {
		w.queued.Store(true)
		n := w.node
		n.mu.Lock()
		w.refs++
		n.mu.Unlock()
		f.uploads.enqueue(&stateJob{w: w})
	}
	return true, nil
}

// syncAndNoteLocked makes the staged content durable and writes its note.
func (w *writeState) syncAndNoteLocked(key string, size int64) (string, error) {
	if err := w.file.Truncate(size); err != nil { // materialise a truncate up
		return "", fmt.Errorf("staging file: %w", err)
	}
	if err := unix.Fdatasync(int(w.file.Fd())); err != nil {
		return "", fmt.Errorf("staging file: fdatasync: %w", err)
	}
	return writeAck(w.path, ackNote{Key: key, Size: size, Meta: w.node.uploadMeta(w), ClaimToken: w.claimToken})
}

// settleAckLocked uploads acknowledged content before it changes.
func (w *writeState) settleAckLocked(ctx context.Context) error {
	if w.ack == "" {
		return nil
	}
	return w.uploadLocked(context.WithoutCancel(ctx))
}

// clearAckLocked ends an acknowledgement: the content is uploaded or
// discarded.
func (w *writeState) clearAckLocked() {
	if w.ack == "" {
		return
	}
	removeAck(w.ack)
	f := w.fsys()
	f.uploads.release(w.ackSize)
	f.acked.forget(w.ackKey, w)
	w.ack, w.ackSize, w.ackKey = "", 0, ""
}

// settle uploads acknowledged content now once the kernel forgot its
// inode (settle.go): no node answers for its name any more. While the
// node is in the tree it answers itself, and nothing is done here.
func (w *writeState) settle(ctx context.Context) (bool, error) {
	if _, ok := w.node.key(); ok {
		return false, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ack == "" {
		return true, nil // uploaded meanwhile (the job holds mu while it uploads)
	}
	return true, w.uploadLocked(context.WithoutCancel(ctx))
}

// refreshAck rewrites the note of acknowledged content after its
// metadata changed (chmod, touch), so that a successor uploads it with
// the change too. A failure is logged: the upload from this process
// carries the change all the same.
func (w *writeState) refreshAck() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ack == "" {
		return
	}
	key, ok := w.node.key()
	if !ok {
		return
	}
	if _, err := writeAck(w.path, ackNote{Key: key, Size: w.ackSize, Meta: w.node.uploadMeta(w), ClaimToken: w.claimToken}); err != nil {
		klog.ErrorS(err, "rewriting an acknowledgement note", "volume", w.fsys().cfg.VolumeID, "key", key)
	}
}

// uploadAcked uploads acknowledged content now (an fsync on any handle).
func (w *writeState) uploadAcked(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.settleAckLocked(ctx)
}

// forgetUploaded keeps the finish of a clean state from installing the
// uploaded version into the cache: a rename moved that object.
func (w *writeState) forgetUploaded() {
	w.mu.Lock()
	if !w.dirty {
		w.uploaded = nil
	}
	w.mu.Unlock()
}

// stateJob is the upload job of a write state.
type stateJob struct{ w *writeState }

func (j *stateJob) name() string {
	k, _ := j.w.node.key()
	return k
}

// run uploads what is acknowledged (and anything written since by an
// open writer); once nothing is left, the job lets go of the state in
// the same critical section, so that a later close queues a new job.
func (j *stateJob) run(ctx context.Context) (bool, error) {
	w := j.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.uploadLocked(ctx); err != nil {
		return false, err
	}
	w.queued.Store(false)
	return true, nil
}

func (j *stateJob) flush(ctx context.Context) error { return j.w.uploadAcked(ctx) }

// finished drops the job's reference: the last one finishes the state
// (install into the cache).
func (j *stateJob) finished() { j.w.node.releaseWrite(j.w, true) }
