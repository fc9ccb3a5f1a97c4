// Package tier is the shared cache tier of a volume: blocks of origin
// objects kept in an S3-compatible bucket near the compute, which every
// node's cache reads before the origin and fills with what it fetched
// from the origin.
//
// Contract:
//   - A tier object holds one run of cache blocks of one object version:
//     one block of a large object, or a small object whole. Its key is
//     "basin/<2 hex>/<64 hex>" under the tier's prefix, the SHA-256 of
//     the Identity (origin, key, version, size, block size, first block,
//     block count), so a changed origin object (another version) has
//     other keys. Its body is a header (magic, the Identity, a CRC32C per
//     block) followed by the blocks' bytes (codec.go).
//   - Get returns blocks only after it checked the header's Identity
//     against the one asked for and every block's CRC32C: a mismatch, a
//     short or long body, a missing object, an error or a timeout is a
//     miss, never an error to the reader and never wrong bytes. Each kind
//     is counted (Stats).
//   - After Options.ColdAfter lookups in a row found nothing, Get looks
//     up one run in Options.Sample and misses the others at once, until a
//     lookup hits: the first reader of a data set pays few lookups.
//   - Every request has its own timeout (Options.OpTimeout, PutTimeout)
//     and no retry.
//     After Options.Trip errors in a row the tier is skipped for
//     Options.Pause (Get misses at once, Offer refuses), then tried
//     again; Stats.Degraded says so (fail-open: the origin serves).
//   - Filling (fill.go) never blocks the caller: Offer queues a reference
//     to a run (how to read its bytes from the cache's data file, and its
//     CRC32Cs), refused and counted as dropped when the queue
//     (Options.MaxQueue) is full. Options.Uploaders uploaders each read
//     one run, check its CRC32Cs and PUT it: the bytes in memory are
//     bounded by Uploaders runs. Uploads are conditional (IfAbsent): a
//     block two nodes fill at once is stored once.
//   - A hit on an object stored more than Options.RefreshAfter ago is
//     reported stale; the caller stores it again (Refresh, an
//     unconditional PUT), so that last-modified times follow use and a
//     bucket expiration rule evicts the least recently used.
//   - Evict (evict.go) is one pass of the controller over a tier: it
//     lists KeyRoot, deletes the objects last stored before
//     Limits.MaxAge, then the oldest beyond Limits.MaxBytes, at most
//     EvictOptions.MaxDeletes (its memory), in batches; only keys of the
//     tier objects' form are ever deleted.
//   - The tier never learns credentials of the origin and hands out
//     blocks only for the Identity its caller asks for: the caller (the
//     cache) builds it from an ObjectInfo of the origin read with the
//     volume's own credentials.
//
// The package imports objstore only; pkg/cache imports it.
package tier
