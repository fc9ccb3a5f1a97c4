// Package testserver starts real object-store servers for tests: MinIO (S3
// API, also used for the OSS adapter) and fake-gcs-server, each on
// 127.0.0.1 with a random port and a temporary data directory.
//
// Binaries are looked up in $BASIN_TOOLS_DIR/bin, ~/.cache/basin-tools/bin,
// $GOBIN, $GOPATH/bin and $PATH, where hack/install-tools.sh (run by
// `make test` and CI) puts the pinned versions.
//
// Every test that needs something the machine may lack (root, /dev/fuse,
// a server or a tool) asks through this package: RequireRoot,
// RequireFUSE, RequireBinary, or Unavailable for anything else. A missing
// dependency skips the test on a developer machine and fails it when
// CI=true, so CI can never go green without having run it.
//
// One server of each kind is started per test binary (the first test that
// asks starts it; it is stopped by Shutdown, which TestMain should call).
package testserver
