package fuse

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/internal/mountdefaults"
)

// Uploads after close (uploadMode: async). close(2) returns once the
// staged file is on disk and acknowledged (stagedack.go); the upload is
// a job here, run by at most asyncUploadWorkers goroutines. The contract:
//
//   - Bounded: at most asyncMaxFiles files and maxBytes bytes are
//     acknowledged and not uploaded at once; a close over either bound
//     uploads synchronously, as in sync mode (back-pressure, never an
//     error). The queue holds one entry per pending file, and no
//     goroutine exists per file.
//   - Never dropped: a failed upload is counted, logged and tried again
//     with backoff (asyncRetryMin doubling to asyncRetryMax) for as long
//     as the volume is mounted; the staged file stays until it is in the
//     bucket.
//   - fsync of the file uploads it at once (writehandle.go); an fsync of
//     a directory uploads every pending file (flushAll): the kernel sends
//     FUSE_SYNCFS to virtiofs only, so sync(1) and syncfs(2) never reach
//     a FUSE server, and a directory fsync is the volume-wide barrier.
//   - Unmount waits for the pending uploads up to uploadDrainTimeout
//     (drain); past it, with the store down, the acknowledged staged
//     files stay on the node's disk, and the volume's next process
//     uploads them when it starts (the node plugin's stop grace, 10 s by
//     default, may end the wait sooner: the files stay all the same).

// Bounds of the asynchronous uploads.
const (
	// asyncUploadWorkers is the upload concurrency (rclone's default
	// --transfers is 4; its write-back benches use 16).
	asyncUploadWorkers = 16
	// asyncMaxFiles bounds the pending files: each holds its staged
	// file's descriptor.
	asyncMaxFiles = 1024
	// asyncMaxBytes bounds the pending bytes; a quarter of a smaller
	// cache bounds them instead (the staged files live on its disk).
	asyncMaxBytes = 1 << 30
	asyncRetryMin = time.Second
	asyncRetryMax = 30 * time.Second
	// uploadDrainTimeout bounds how long an unmount waits for the
	// pending uploads.
	uploadDrainTimeout = 30 * time.Second
)

// uploadJob is one pending upload: a write state's content acknowledged
// by a close, or a predecessor's acknowledged staged file.
type uploadJob interface {
	// run uploads if still needed. It is idempotent and serialised with
	// every other upload of the same content; done reports that nothing
	// is left to upload for this job (then the worker calls finished).
	run(ctx context.Context) (done bool, err error)
	// finished runs once, after the run that reported done.
	finished()
	// flush uploads now if still needed, outside the workers (a
	// directory fsync); the job stays queued.
	flush(ctx context.Context) error
	// name is the job's key, for logs.
	name() string
}

// uploader runs the upload jobs of one file system.
type uploader struct {
	// constant
	f        *FS
	maxBytes int64
	ctx      context.Context // workers' lifetime; cancelled when a drain gives up
	cancel   context.CancelFunc

	mu   sync.Mutex
	cond *sync.Cond // signals queue and pending changes
	// guarded by mu
	queue   []uploadJob
	pending map[uploadJob]struct{} // queued or running
	files   int                    // reserved: acknowledged, not uploaded
	bytes   int64
	workers int
	closed  bool
	// INVARIANT: files <= asyncMaxFiles and bytes <= maxBytes, except for
	// a predecessor's files (reserved unconditionally at start).

	failures  atomic.Int64 // failed background attempts
	fallbacks atomic.Int64 // closes over a bound, uploaded synchronously
	recovered atomic.Int64 // predecessor's acknowledged files uploaded
	wg        sync.WaitGroup
}

// uploadsAfterClose reports whether closes are acknowledged before their
// upload (uploadMode async). Only then can a write state hold an
// acknowledgement; a predecessor's acknowledged files are recovered in
// either mode (stagedack.go).
func (f *FS) uploadsAfterClose() bool {
	return f.cfg.UploadMode == mountdefaults.UploadAsync
}

func newUploader(f *FS) *uploader {
	u := &uploader{f: f, maxBytes: asyncMaxBytes, pending: map[uploadJob]struct{}{}}
	if c := f.cfg.CacheSize; c > 0 {
		u.maxBytes = min(u.maxBytes, c/4)
	}
	u.ctx, u.cancel = context.WithCancel(context.Background())
	u.cond = sync.NewCond(&u.mu)
	return u
}

// reserve counts a file of size bytes as pending if the bounds allow it.
func (u *uploader) reserve(size int64) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed || u.files+1 > asyncMaxFiles || u.bytes+size > u.maxBytes {
		u.fallbacks.Add(1)
		return false
	}
	u.files++
	u.bytes += size
	return true
}

// reserveAlways counts a predecessor's file, whatever the bounds.
func (u *uploader) reserveAlways(size int64) {
	u.mu.Lock()
	u.files++
	u.bytes += size
	u.mu.Unlock()
}

// release undoes a reserve once the file is uploaded or discarded.
func (u *uploader) release(size int64) {
	u.mu.Lock()
	u.files--
	u.bytes -= size
	u.mu.Unlock()
}

// usage is the pending files and bytes.
func (u *uploader) usage() (files int, bytes int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.files, u.bytes
}

// enqueue adds a job; a worker is started while fewer than
// asyncUploadWorkers run.
func (u *uploader) enqueue(j uploadJob) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.queue = append(u.queue, j)
	u.pending[j] = struct{}{}
	if u.workers < asyncUploadWorkers && u.workers < len(u.pending) && !u.closed {
		u.workers++
		u.wg.Add(1)
		go u.work()
	}
	u.cond.Broadcast()
}

func (u *uploader) work() {
	defer u.wg.Done()
	for {
		u.mu.Lock()
		for len(u.queue) == 0 && !u.closed {
			u.cond.Wait()
		}
		if len(u.queue) == 0 || u.ctx.Err() != nil {
			u.workers--
			u.mu.Unlock()
			return
		}
		j := u.queue[0]
		u.queue[0] = nil
		u.queue = u.queue[1:]
		u.mu.Unlock()
		if !u.runUntilDone(j) {
			continue // given up at a drain: the job stays pending
		}
		j.finished()
		u.mu.Lock()
		delete(u.pending, j)
		u.cond.Broadcast()
		u.mu.Unlock()
	}
}

// runUntilDone runs j until it succeeds, with backoff between failures;
// false when the uploader's context ends first.
func (u *uploader) runUntilDone(j uploadJob) bool {
	wait := asyncRetryMin
	for {
		done, err := j.run(u.ctx)
		if err == nil && done {
			return true
		}
		if err != nil {
			u.failures.Add(1)
			klog.ErrorS(err, "background upload failed; retrying", "volume", u.f.cfg.VolumeID, "key", j.name(), "retryIn", wait)
		}
		select {
		case <-u.ctx.Done():
			return false
		case <-time.After(wait):
		}
		wait = min(2*wait, asyncRetryMax)
	}
}

// flushAll uploads every pending job now, in the caller's goroutine (a
// directory fsync). It returns the first error.
func (u *uploader) flushAll(ctx context.Context) error {
	u.mu.Lock()
	jobs := make([]uploadJob, 0, len(u.pending))
	for j := range u.pending {
		jobs = append(jobs, j)
	}
	u.mu.Unlock()
	var first error
	for _, j := range jobs {
		if err := j.flush(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// drain waits up to timeout for every pending upload (the mount is gone,
// so no new one comes), then stops the workers. What is left stays
// staged and acknowledged, for the volume's next process.
func (u *uploader) drain(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	stop := time.AfterFunc(timeout, func() {
		u.mu.Lock()
		u.cond.Broadcast()
		u.mu.Unlock()
	})
	defer stop.Stop()
	u.mu.Lock()
	for len(u.pending) > 0 && time.Now().Before(deadline) {
		u.cond.Wait()
	}
	left := len(u.pending)
	u.closed = true
	u.cond.Broadcast()
	u.mu.Unlock()
	if left > 0 {
		klog.ErrorS(nil, "unmounted with uploads pending; their files stay staged for the volume's next process",
			"volume", u.f.cfg.VolumeID, "files", left, "waited", timeout)
	}
	u.cancel()
	u.wg.Wait()
}
