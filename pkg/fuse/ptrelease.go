package fuse

import "time"

// A read handle's RELEASE is asynchronous (readOpenFlags): close(2)
// returns before the kernel tells the server, so a process that reads a
// file, closes it and opens it for writing — an append after reading a
// log, a read-back before the next save — can find its own passthrough
// open still counted, and a write open of an inode open in passthrough
// mode fails with ETXTBSY. A write open therefore first waits, briefly,
// for the passthrough opens of its inode to be released; one still held
// after the wait (another reader) fails it as before.

// ptReleaseWait bounds a write open's wait for passthrough opens to end.
const ptReleaseWait = time.Second

// awaitPassthroughClosed returns once the inode has no passthrough open,
// or after ptReleaseWait. It ignores the request's interrupt, as flush
// does: a Go program's open gets preemption signals all the time, and an
// interrupted wait answered ETXTBSY (make soak: an append after 0.47 s).
func (n *fileNode) awaitPassthroughClosed() {
	deadline := time.NewTimer(ptReleaseWait)
	defer deadline.Stop()
	for {
		n.mu.Lock()
		if n.ptOpens == 0 {
			n.mu.Unlock()
			return
		}
		if n.ptClosed == nil {
			n.ptClosed = make(chan struct{})
		}
		closed := n.ptClosed
		n.mu.Unlock()
		select {
		case <-closed:
		case <-deadline.C:
			return
		}
	}
}

// passthroughClosedLocked wakes the waiters of awaitPassthroughClosed
// once the last passthrough open is released. The caller holds n.mu.
func (n *fileNode) passthroughClosedLocked() {
	if n.ptOpens == 0 && n.ptClosed != nil {
		close(n.ptClosed)
		n.ptClosed = nil
	}
}
