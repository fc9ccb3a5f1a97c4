// Package epoch is what the node-level benchmark scenarios
// (bench/cmd/sharedtier, bench/cmd/secondpv) share: the origin MinIO,
// with its data in a tmpfs, behind the WAN emulator and with the data sets
// written (StartOrigin); the flags that size the data sets (SetFlags); and
// an epoch, every file of a set read once in an order fixed by a seed by a
// number of reader threads, failures counted rather than fatal (Read),
// with a content check of a sample of files (VerifySample).
//
// The servers keep their data in a tmpfs so that dropping the page cache
// before an epoch empties the mounts' caches, not the servers' (a remote
// bucket's disks are not this machine's).
package epoch
