// Package mountdefaults is the one place the default settings of a Basin
// mount are written. pkg/mountspec builds its Default spec from them (the
// defaults of volume attributes and of `csi-driver mount`'s flags), and
// pkg/cache and pkg/fuse use them for their zero values: those two may not
// import pkg/mountspec (the layer rules in tests/conventions), so the
// numbers live below all three.
package mountdefaults

import (
	"os"
	"time"
)

// Defaults of a mount.
const (
	CacheSize           = 10 << 30
	CacheBlockSize      = 4 << 20
	MetadataTTL         = time.Minute
	NegativeMetadataTTL = 5 * time.Second
	// MaxParallelFetches is the upper bound of the GETs a mount keeps in
	// flight; the cache starts with 8 and raises the number while the
	// measured throughput grows (pkg/cache fetchtune.go).
	MaxParallelFetches = 32
	// FetchPartSize is the size of the cache's ranged GETs of a large
	// object (8 MiB: the size Mountpoint found fastest on S3).
	FetchPartSize = 8 << 20
	// ReadAhead caps the prefetch window of a sequential reader. The
	// window itself follows the cache (twice what its GETs in flight
	// hold, so that parts fetched and waiting for the reader do not take
	// the window from the next fetches: behind a WAN emulator a cold 2 GiB
	// read reached 0.78–0.80 of a parallel ranged-GET download with a
	// window of 64 MiB for 8 GETs and 0.91–0.92 with 128 or 256 MiB,
	// bench/cmd/coldread); the cap lets it follow up to the bound.
	ReadAhead = 2 * MaxParallelFetches * FetchPartSize
	// PrefetchBudget bounds the bytes directory prefetch fetched that no
	// reader opened since: at least a random-order epoch's share of a
	// data set of small files, so that the reader finds most of what it
	// opens prefetched (docs/architecture.md, "Directory prefetch").
	PrefetchBudget = 4 << 30
	// BufferSize bounds the memory of a mount's block buffers: the GETs
	// in flight, blocks waiting for the disk and blocks kept for a reader
	// behind its read-ahead (pkg/cache writeback_pool.go). A cold
	// sequential read keeps about its rate times one GET's duration in
	// flight, so the buffers bound it on a link with a long delay; the
	// default keeps the FUSE process within 256 MiB
	// (docs/architecture.md, "The cold checkpoint read and memory").
	BufferSize = 128 << 20
	OpTimeout  = 60 * time.Second
	FileMode   = os.FileMode(0o644)
	DirMode    = os.FileMode(0o755)
)

// Limits of a mount's settings.
const (
	MinCacheBlockSize = 4 << 10
	MaxCacheBlockSize = 1 << 30
	MinBufferSize     = 16 << 20
	MaxBufferSize     = 64 << 30
)
