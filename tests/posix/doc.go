// Package posix runs a POSIX conformance suite that nobody on this project
// wrote — go-fuse's posixtest package (github.com/hanwen/go-fuse/v2/posixtest,
// cases ported from xfstests and from go-fuse's own bug reports) — against
// a Basin mount of a MinIO bucket and against rclone's mount of the same
// bucket as a reference, one case per child process so that a case that
// fails or hangs does not take the others with it.
//
// The test asserts that Basin fails no case outside the limitations
// documented in docs/conformance.md and no more cases than rclone.
// BASIN_POSIX_REPORT=file writes the per-case results table there (the
// table in docs/conformance.md comes from it). The tests need root,
// /dev/fuse, MinIO and rclone; under CI=true a missing one fails them.
package posix
