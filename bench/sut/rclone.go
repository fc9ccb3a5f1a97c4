package sut

import "fmt"

// NewRclone returns rclone mount over the S3 bucket, tuned per rclone's
// VFS documentation for read-mostly ML data: full VFS cache that outlives
// remounts (max-age a month), directory and attribute caches for the run,
// no polling, server modification times (no HEAD per file), fast
// fingerprints, a large read-ahead for checkpoints, and prompt (1 s after
// close) parallel multipart uploads for writes. AWS_CA_BUNDLE is removed: rclone 1.60 fails with it.
func NewRclone(env Env) System {
	conf := fmt.Sprintf("[bench]\ntype = s3\nprovider = Minio\nenv_auth = false\n"+
		"access_key_id = %s\nsecret_access_key = %s\nendpoint = %s\nregion = %s\nforce_path_style = true\n",
		env.S3.AccessKey, env.S3.SecretKey, env.S3.Endpoint, env.S3.Region)
	return newFuseSystem(env, recipe{
		name:        "rclone",
		backend:     BackendS3,
		bin:         "rclone",
		installHint: "apt-get install rclone",
		files:       map[string][]byte{"rclone.conf": []byte(conf)},
		unsetEnv:    []string{"AWS_CA_BUNDLE"},
		note: fmt.Sprintf("rclone.conf [bench]: type = s3, provider = Minio, endpoint = %s, region = %s, "+
			"force_path_style = true, keys in the 0600 file; AWS_CA_BUNDLE unset", env.S3.Endpoint, env.S3.Region),
		args: func(mnt, cache, dir string) []string {
			return []string{"mount", "bench:" + env.S3.Bucket, mnt,
				"--config", dir + "/rclone.conf",
				"--cache-dir", cache,
				"--vfs-cache-mode", "full",
				"--vfs-cache-max-size", "100G",
				"--vfs-cache-max-age", "720h",
				"--dir-cache-time", "720h",
				"--attr-timeout", "720h",
				"--poll-interval", "0",
				"--use-server-modtime",
				"--vfs-fast-fingerprint",
				"--vfs-read-ahead", "256M",
				"--buffer-size", "32M",
				"--max-read-ahead", "1M",
				"--vfs-write-back", "1s",
				"--transfers", "16",
				"--s3-upload-concurrency", "8",
				"--s3-chunk-size", "16M",
				"--s3-no-check-bucket",
				"--log-level", "NOTICE",
			}
		},
	})
}
