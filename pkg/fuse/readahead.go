package fuse

// seqDetector watches the reads of one open file and decides what to
// prefetch. A read that starts near where the previous one ended continues
// a sequential run; the kernel issues readahead requests concurrently and
// slightly out of order, so "near" allows a gap of one maximum request in
// either direction. A run starts with a window of min bytes and quadruples
// it, up to max and to the window the cache asks for now (which follows
// its fetch parallelism), each time the reader has consumed half of what
// was prefetched or one step (the cache's ranged-GET size) of it: topping
// the window up as soon as one fetch's worth is free keeps every fetch
// slot busy while the reader waits for the oldest part, and quadrupling
// (rather than doubling) reaches 24 GETs in flight in two steps instead
// of four, each step lasting a ranged GET. A random read ends the run.
// A run that does not start at offset 0 prefetches only once it covers
// more than two maximum requests: the kernel reads a random pread in
// contiguous requests aligned to up to one maximum request (a 1 MiB
// pread at an unaligned offset arrives as 2 MiB), which must not look
// like a stream (in the benchmark's 16 random 1 MiB readers, a tenth of
// the reads did, each prefetching 16 MiB that kept blocks in the cache's
// pool for nobody).
// Not safe for concurrent use.
type seqDetector struct {
	// constant
	min, max, step int64

	next   int64 // where a sequential read is expected to start
	from   int64 // where the current run started
	window int64 // current prefetch window; 0 outside a run
	ahead  int64 // prefetch issued up to here (exclusive)
}

// seqTolerance is how far from the expected offset a read may start and
// still count as sequential: the largest FUSE read request.
const seqTolerance = 1 << 20

func newSeqDetector(minWindow, maxWindow, step int64) seqDetector {
	if maxWindow > 0 && minWindow > maxWindow {
		minWindow = maxWindow
	}
	return seqDetector{min: minWindow, max: maxWindow, step: step}
}

// observe records a read of n bytes at off in an object of size bytes and
// returns the range to prefetch; length 0 means nothing to do. limit, when
// positive, caps the window below max (the cache's PrefetchWindow).
func (d *seqDetector) observe(off, n, size, limit int64) (pfOff, pfLen int64) {
	if d.max <= 0 || n <= 0 {
		return 0, 0
	}
	maxWindow := d.max
	if limit > 0 {
		maxWindow = min(maxWindow, limit)
	}
	end := off + n
	sequential := (off == 0 && d.next == 0) || (off >= d.next-seqTolerance && off <= d.next+seqTolerance)
	if end > d.next || !sequential {
		d.next = end
	}
	if !sequential {
		d.window, d.ahead, d.from = 0, 0, off
		return 0, 0
	}
	if d.window == 0 && d.from > 0 && end-d.from <= 2*seqTolerance {
		return 0, 0 // maybe one read in pieces
	}
	switch {
	case d.window == 0:
		d.window = min(d.min, maxWindow)
	case d.ahead-end < d.window/2 || d.ahead-end <= d.window-d.step:
		d.window = min(4*d.window, maxWindow)
	default:
		return 0, 0 // enough is in flight
	}
	from := max(d.ahead, end)
	to := min(end+d.window, size)
	if to > d.ahead {
		d.ahead = to
	}
	if to <= from {
		return 0, 0
	}
	return from, to - from
}
