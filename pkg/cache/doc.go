// Package cache is Basin's node-local cache of one volume: object data in
// sparse local files, metadata and the inode table in a bbolt index, so
// that the first read of a byte goes to the bucket and every later read on
// the node, also after a restart, comes from local disk.
//
// # On-disk layout
//
// One directory per volume (0700), usually /var/lib/basin/cache/<volume-id>:
//
//	LOCK          flock(LOCK_EX) held by the process that has the cache open
//	index.db      bbolt index (0600), schema in index.go
//	usage.json    last published usage (internal/cacheusage), read without the
//	              lock by the node plugin and csi-driver cache (advisory)
//	data/abc/abc…(64 hex)
//	              one sparse file (0600) per object version; the name is
//	              sha256(len|Origin, len|key, len|Version, size), never the
//	              key, so keys with "..", "/", odd bytes or 4 KiB length are
//	              safe; fan-out over 4096 directories (first 3 hex digits)
//	staging/      StagingDir: files installed by rename (Install); emptied
//	              by Open
//	writes/       WritesDir: files being written through FUSE, kept across
//	              Open for a successor process to adopt; owned by the FUSE
//	              layer
//
// A data file holds the object's bytes at their offsets; a block absent
// from the cache is a hole (or lies past the end of the file). A fully
// present data file is exactly the object: FUSE can open it for
// passthrough (Handle.LocalPath).
//
// # Index
//
// Buckets: meta (schema version, Origin, clean-shutdown flag, next inode
// number, used bytes, object count), objects (key → version, size, block
// size, allocated bytes, presence bitmap, CRC32C per present block), atime
// and lru (last access per key, and the same ordered by time for
// eviction), attrs and negative (Stat cache), listings (List cache),
// inodes and paths (the inode table). Values are encoded by codec.go.
//
// Writes are group-committed (index.update): concurrent callers share one
// transaction and one fsync. Block presence, access times and metadata are
// kept in memory and flushed every flushInterval (flush.go), after syncing
// the data they describe; an access time alone is flushed only once it is
// atimeGrain newer than the indexed one (relatime), and Sync and Close
// flush exact times. New inode numbers come from a durably reserved
// range, and their path pairs are committed (group-committed with
// concurrent callers) before InodesOf returns them (inode.go): a lookup
// that creates numbers waits for that fsync, so that a successor process
// resolves every number the kernel was given. A failed commit is retried
// in the background. Sync flushes everything now (e.g. before a planned
// handover).
//
// # Hot path
//
// A read of blocks that are ready (present and checked in this process) is
// two atomic bitmap loads and one pread on the data file: no lock, no index
// transaction, no allocation. Misses start one job per run of blocks (one
// flight per block, so concurrent readers of a block share one GET).
//
// A fetched block goes to its waiting readers from the fetch buffer as
// soon as it arrived; the write to the data file (O_DIRECT where the file
// system allows) follows in the background (writeback.go), holding a pin
// and the block's flight, and only then is the block present and ready.
// Buffers come from a bounded pool per block size (writeback_pool.go);
// blocks written directly keep theirs a while for the reader behind the
// read-ahead (writeback_kept.go). Close waits for the writes.
//
// Directory prefetch (prefetch.go): once a reader opened two small
// objects not cached yet of a directory with a trusted listing, the
// directory's other small objects are fetched in the background, on fetch
// slots of their own, within the room below the low watermark and a
// budget of bytes fetched and not opened since.
//
// Unpinned objects stay in memory in the idle tier (idle.go): up to
// tuning.maxIdle of them keep their presence, CRCs and ready bits, and the
// most recent tuning.maxIdleFiles of those their data file's descriptor;
// the others' files are opened again at their next open. An object in
// memory is its key's authority: eviction, installs and version changes
// change it there, so no record of an object out of memory is cached.
//
// # Invariants
//
//   - Data before index: a block is recorded present in the index only
//     after its bytes were written and synced (fdatasync or syncfs) by the
//     flush that records it. A crash loses recently cached blocks, never
//     makes the index claim bytes that are not on disk.
//   - Never wrong bytes: a present block is served only after its CRC32C
//     matched once in this process (or this process wrote it). A mismatch
//     or a short file is a miss: the block is fetched again.
//   - Versions never mix: every GET carries IfVersion of the pinned
//     version; a refused GET (ErrPreconditionFailed) detaches the cached
//     version and forgets the key's attributes.
//   - meta "used" is the sum of the records' allocated bytes; the
//     in-memory used counter is the allocation of all data files
//     (including detached versions still pinned) plus reservations.
//     Accounting is in allocated bytes (st_blocks), not logical sizes.
//   - bucket atime and bucket lru describe exactly the object records.
//   - Pinned objects (open Handles, running fetches) are never evicted and
//     keep their data file open; idle ones may close it (idle.go).
//   - The inode table is a bijection; numbers are never reused (meta
//     "nextino" is beyond every number handed out); root "" is 1. Every
//     number handed out is committed with its path. A crash may lose
//     reserved numbers and pairs whose commit was in flight (never handed
//     out): those numbers name nothing.
//
// # Recovery
//
// Close sets meta "clean". Open after an unclean shutdown (or with another
// Origin, which drops all cached data) reconciles the index with the data
// directory (recover.go); Verify (verify.go) checks all invariants, like
// fsck, for tests and maintenance.
//
// # Eviction
//
// Whole objects, least recently used first, when allocation exceeds
// HighWatermark*Capacity (down to LowWatermark) or the disk's free ratio
// drops below MinFreeRatio; on demand when a block would not fit. A block
// that cannot be cached (everything pinned, disk full) is still returned
// to the reader. The node view (node.go) evicts idle volumes' caches to
// meet a node-wide budget.
package cache
