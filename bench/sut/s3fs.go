package sut

// NewS3fs returns s3fs-fuse over the S3 bucket, tuned per its man page and
// FAQ for read-mostly data: a persistent local cache (use_cache), a large
// stat cache that lives for the run, negative caching, kernel page cache
// kept across opens, and parallel multipart uploads. Credentials come from
// a 0600 passwd file.
func NewS3fs(env Env) System {
	return newFuseSystem(env, recipe{
		name:        "s3fs",
		backend:     BackendS3,
		bin:         "s3fs",
		installHint: "apt-get install s3fs",
		note:        "keys in the 0600 passwd_file",
		files:       map[string][]byte{"passwd": []byte(env.S3.AccessKey + ":" + env.S3.SecretKey + "\n")},
		args: func(mnt, cache, dir string) []string {
			return []string{env.S3.Bucket, mnt, "-f",
				"-o", "passwd_file=" + dir + "/passwd",
				"-o", "url=" + env.S3.Endpoint,
				"-o", "use_path_request_style",
				"-o", "endpoint=" + env.S3.Region,
				"-o", "use_cache=" + cache,
				"-o", "stat_cache_expire=86400",
				"-o", "max_stat_cache_size=1000000",
				"-o", "enable_noobj_cache",
				"-o", "kernel_cache",
				"-o", "parallel_count=16",
				"-o", "multipart_size=16",
				"-o", "multireq_max=20",
				"-o", "dbglevel=warn",
			}
		},
	})
}
