// Package scenario holds the benchmark's workloads as plain functions over
// a directory: they know nothing about mounts, caches or proxies, so the
// same code measures Basin, each peer and the local ceiling.
//
//   - ReadFiles: whole-file reads in a seeded random order by N threads
//     (a training epoch over small files), or in order by one thread
//     (sequential checkpoint read);
//   - RandomReads: fixed-size preads at seeded 4 KiB-aligned offsets by N
//     threads (random access into a checkpoint);
//   - Walk: a find-style walk that lstats every entry, one thread;
//   - WriteFiles: sequential writes of generated files, fsync and close,
//     timed until the data is durable in the bucket;
//   - CreateFiles: new small files made one by one in new directories
//     (O_CREAT|O_EXCL, write, close: cp -r), timed until in the bucket;
//   - Torch: a PyTorch DataLoader epoch, in a separate interpreter.
//
// A workload stopped by its context's deadline returns what it did so far
// with Measure.Partial set, so one slow system cannot stall the run; a
// cancelled context or an I/O error is an error.
package scenario
