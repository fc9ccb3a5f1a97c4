package sut

// NewGCSFuse returns gcsfuse over the fake-gcs-server bucket, tuned per
// gcsfuse's performance guide for ML training: implicit directories,
// metadata, stat, type and kernel list caches without TTL or size limit,
// an unlimited file cache that also caches ranged reads and downloads in
// parallel, and more connections per host. Anonymous access: the emulator
// has no authentication.
func NewGCSFuse(env Env) System {
	return newFuseSystem(env, recipe{
		name:        "gcsfuse",
		backend:     BackendGCS,
		bin:         "gcsfuse",
		installHint: "GOBIN=~/.cache/basin-tools/bin GOTOOLCHAIN=go1.27.2 go install github.com/googlecloudplatform/gcsfuse/v3@v3.13.0",
		args: func(mnt, cache, dir string) []string {
			return []string{"--foreground",
				"--custom-endpoint", env.GCS.Endpoint + "/storage/v1/",
				"--anonymous-access",
				"--client-protocol", "http1",
				"--implicit-dirs",
				"--metadata-cache-ttl-secs", "-1",
				"--stat-cache-max-size-mb", "-1",
				"--type-cache-max-size-mb", "-1",
				"--kernel-list-cache-ttl-secs", "-1",
				"--cache-dir", cache,
				"--file-cache-max-size-mb", "-1",
				"--file-cache-cache-file-for-range-read",
				"--file-cache-enable-parallel-downloads",
				"--max-conns-per-host", "100",
				"--temp-dir", dir,
				"--log-severity", "warning",
				env.GCS.Bucket(), mnt,
			}
		},
	})
}
