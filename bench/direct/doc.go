// Package direct is the benchmark's direct client: the cold phases' reads
// and writes played straight against the bucket through the WAN emulator,
// with no file system in between. It is the ceiling of the cold phases
// (the report's "Basin ÷ direct"), as the local directory is the ceiling of
// the warm ones.
//
//   - Get: whole objects, one GET each, N at once (the small-file epoch);
//   - Download: objects one after the other, each by parallel ranged GETs
//     of a fixed part size (the checkpoint read; the runner keeps the best
//     of several widths, bench/cmd/coldread reports each);
//   - Ranges: one ranged GET per read, N at once (random reads);
//   - Put: objects one after the other through the store adapter's Put,
//     which uploads a body larger than one part as a multipart upload
//     (the checkpoint write and the creation of small files);
//   - Verify: whole objects checked against the data set's content.
//
// The workloads run in a process of their own (Serve, started by
// bench/sut's direct system as `basin-bench direct-client`), so that its
// CPU time is measured the way a FUSE process's is: the benchmark's own
// process also runs the WAN emulator. Requests and answers are JSON lines
// on the child's stdin and stdout.
package direct
