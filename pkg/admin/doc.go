// Package admin is the per-volume admin endpoint of a FUSE process
// (`csi-driver mount`): HTTP over a unix socket in the volume's cache
// directory (SocketPath: <cacheDir>/admin.sock, mode 0600 in a 0700
// directory, so only root and the volume's own process reach it).
//
// A mounted volume's cache index is locked by the process serving it, so
// anything that wants to look inside a live cache — the node plugin
// aggregating metrics, `csi-driver cache stats|ls|verify|gc` — asks that
// process over this socket. When no process serves the volume, the same
// questions are answered by opening the cache directory offline
// (ForOffline), so callers see one interface, Volume, either way.
//
// Endpoints (JSON unless noted):
//
//	GET  /metrics       Prometheus exposition of the process's registry
//	GET  /info          Info: volume, cache directory, pid, start time
//	GET  /cache/stats   Stats: usage, hit/miss and bucket counters
//	GET  /cache/ls      []Entry; ?order=oldest|largest&limit=N&prefix=P
//	POST /cache/verify  VerifyReport: an fsck of the cache (reads every
//	                    cached byte; index flushes wait meanwhile)
//	POST /cache/gc      GCResult; ?target=BYTES or ?capacity=BYTES
//
// Layout: types.go (wire types), volume.go (Volume and the adapters over
// a live or offline cache), server.go, client.go, socket.go.
package admin
