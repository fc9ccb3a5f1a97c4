// Package warmup preloads a mounted Basin volume's node-local cache: it
// walks paths of the mount and reads every file (or, metadata only, stats
// it) with parallel workers, so that a workload started later reads local
// data.
//
// It works through the file system only, never through the cache's files:
// what it reads is what any application would read. It is the one warmup
// engine; each of its three callers keeps its glue in one file:
//
//	csi-driver warmup         cmd/csi-driver/warmup.go (flags, progress bar, summary, --result)
//	the warmup attribute      pkg/driver/node_warmup.go (the node plugin, after NodeStageVolume)
//	the Warmup resource       pkg/warmupctl/engine.go (pods that run csi-driver warmup; their Report)
//
// Resumable: with a state file, finished files (and directories whose
// files are all finished) are recorded as the run goes; a later run with
// the same paths, mode and state file skips them. A complete run without
// errors removes the state file, so the next run warms everything again
// (reading files that are still cached costs local reads only).
//
// Honest about the cache: a Basin mount answers statfs with its cache's
// capacity and use (pkg/fuse). Run compares the size of the warmed paths
// with the capacity and the use after the run, and says when the data
// cannot all be cached (CacheReport). It cannot see which objects were
// evicted; the report says what the numbers allow to conclude.
package warmup
