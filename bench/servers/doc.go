// Package servers starts the object-store servers the benchmark runs
// against — MinIO (S3) and fake-gcs-server (GCS) — as child processes on
// 127.0.0.1 with their data under a directory of the caller's choosing.
// It is the non-test counterpart of internal/testserver, which needs a
// testing.TB.
package servers
