// Package testserver starts real object-store servers for tests: MinIO (S3
// API, also used for the OSS adapter) and fake-gcs-server, each on
// 127.0.0.1 with a random port and a temporary data directory.
//
// Binaries are looked up in $BASIN_TOOLS_DIR/bin, ~/.cache/basin-tools/bin,
// $GOBIN, $GOPATH/bin and $PATH. A missing binary skips the test on a
// developer machine and fails it when CI=true, so CI can never go green
// without having talked to the real servers.
//
// One server of each kind is started per test binary (the first test that
// asks starts it; it is stopped by Shutdown, which TestMain should call).
package testserver
