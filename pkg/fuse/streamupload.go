package fuse

import (
	"context"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/objstore"
)

// A file written sequentially from empty goes up while it is written. Once
// its staged content passes two parts, a stream (objstore.Store.StartStream)
// reads the staged file behind the writes: every write that appends moves
// the stream's high-water mark (Extend), whole parts go up in the
// background, up to Config.StreamParts at once, and a write never waits for
// the network. The parts are read from the staged file, not copied: memory
// stays at what the HTTP requests in flight hold, whatever the file's size.
//
// The write path's promises are unchanged (stagedwrites.go, writestate.go):
//   - the staged file still holds the whole content, so a successor that
//     adopts it uploads it again at close, as before;
//   - a close or fsync that returned success completed the upload (Complete
//     waits for the last parts and makes them the object);
//   - nothing replaces the old object before then: a multipart upload is
//     invisible until completed, and one abandoned by a killed process
//     never completes.
//
// Anything that is not an append — a write below the end (a rewrite), a
// write past it (a hole), a truncate — aborts the stream and the file is
// uploaded whole at close, as before (a fallback, counted by reason). So
// do an unlink, a failed part and a rename between the stream's start and
// its completion. fsync and close complete the stream; data written after
// that is uploaded whole at the next close.

// fallback is why a stream was given up.
type fallback int

const (
	fallbackRewrite  fallback = iota // a write that did not append
	fallbackTruncate                 // a truncate
	fallbackUnlink                   // unlinked while written
	fallbackRename                   // the key changed under the stream
	fallbackError                    // the stream failed; uploaded again
	numFallbacks
)

// String is the reason label of the fallback metric.
func (r fallback) String() string {
	switch r {
	case fallbackRewrite:
		return "rewrite"
	case fallbackTruncate:
		return "truncate"
	case fallbackUnlink:
		return "unlink"
	case fallbackRename:
		return "rename"
	default:
		return "error"
	}
}

// upstream is the stream of one write state's content.
type upstream struct {
	// constant
	st  objstore.Stream
	key string
	src *stagedSource // what the stream reads; closed when it ends
}

// streamThreshold is the size from which a sequentially written file is
// streamed: smaller files keep one PUT at close.
func (f *FS) streamThreshold() int64 { return 2 * f.cfg.StreamPartSize }

// appendedLocked runs after a write of [off, end) onto content that was
// size bytes long. The caller holds w.mu.
func (w *writeState) appendedLocked(off, end, size int64) {
	if !w.seq {
		return
	}
	if off != size {
		w.stopStreamLocked(fallbackRewrite)
		return
	}
	if w.up != nil {
		w.up.st.Extend(end)
		return
	}
	if end >= w.fsys().streamThreshold() {
		w.startStreamLocked(end)
	}
}

// startStreamLocked starts streaming the staged content, of which size
// bytes are written. The caller holds w.mu.
func (w *writeState) startStreamLocked(size int64) {
	f := w.fsys()
	key, ok := w.node.key()
	if f.cfg.StreamParts < 0 || !ok {
		w.seq = false
		return
	}
	// The stream outlives the WRITE that starts it: Complete or Abort
	// ends it.
	src := newStagedSource(w.file, f.parts, f.cfg.StreamPartSize)
	st, err := f.store.StartStream(context.Background(), key, src,
		objstore.StreamOptions{PartSize: f.cfg.StreamPartSize, Concurrency: f.cfg.StreamParts})
	if err != nil {
		src.close()
		klog.V(2).InfoS("streamed upload not started; the file is uploaded at close", "volume", f.cfg.VolumeID, "key", key, "err", err)
		w.seq = false
		return
	}
	w.up = &upstream{st: st, key: key, src: src}
	f.counters.streams.Add(1)
	st.Extend(size)
}

// stopStreamLocked gives streaming up for the rest of this content: the
// file is uploaded whole at close. The caller holds w.mu.
func (w *writeState) stopStreamLocked(why fallback) {
	w.seq = false
	if w.up == nil {
		return
	}
	w.up.st.Abort()
	w.up.src.close()
	w.up = nil
	w.fsys().counters.fallbacks[why].Add(1)
	klog.V(2).InfoS("streamed upload given up; the file is uploaded at close", "volume", w.fsys().cfg.VolumeID, "reason", why.String())
}

// completeStreamLocked makes the stream's parts the object key of size
// bytes. false: there was no stream, or it failed (and was aborted), and
// the caller uploads the staged file itself. The caller holds w.mu.
func (w *writeState) completeStreamLocked(ctx context.Context, key string, size int64) (objstore.ObjectInfo, bool) {
	up := w.up
	if up == nil {
		return objstore.ObjectInfo{}, false
	}
	if up.key != key {
		w.stopStreamLocked(fallbackRename)
		return objstore.ObjectInfo{}, false
	}
	f := w.fsys()
	sent := up.st.Sent() // uploaded while the file was written
	info, err := up.st.Complete(ctx, size)
	if err != nil {
		klog.InfoS("streamed upload failed; uploading the file again", "volume", f.cfg.VolumeID, "key", key, "err", err)
		w.stopStreamLocked(fallbackError)
		return objstore.ObjectInfo{}, false
	}
	up.src.close()
	w.up, w.seq = nil, false // what is written after this goes up at close
	f.counters.streamedBytes.Add(sent)
	return info, true
}
