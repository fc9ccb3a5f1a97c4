// Package wanproxy is the benchmark's WAN emulator: an HTTP reverse proxy in
// front of an object-store server (MinIO, fake-gcs-server) that makes a
// loopback server look like a bucket across a network.
//
// The kernel on the benchmark machines has no netem qdisc, so the shaping is
// done in process:
//
//   - time to first byte: every request waits Config.TTFB before it is
//     forwarded, like one round trip plus the store's first-byte latency;
//   - per-connection bandwidth: each accepted TCP connection has its own
//     token bucket per direction (Config.ConnBandwidth), like the throughput
//     one TCP flow gets over a long fat pipe;
//   - aggregate bandwidth: all connections share one token bucket per
//     direction (Config.TotalBandwidth), like the NIC or the bucket's limit.
//
// The proxy counts requests and body bytes per request kind (GET, HEAD,
// LIST, PUT, OTHER; see Classify) so a report can show what each file
// system costs in requests. Stats are cumulative; callers diff two
// snapshots around a phase. AdminHandler serves them as JSON.
//
// The Host header is passed through unchanged so that S3 signatures made
// for the proxy's address still verify at the upstream, unless
// Config.RewriteHost asks for the upstream's (fake-gcs-server routes by it).
package wanproxy
