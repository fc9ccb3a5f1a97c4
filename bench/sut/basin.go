package sut

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// NewBasin returns Basin's own FUSE mount, `csi-driver mount`, over the S3
// bucket, with the flags of the FUSE issue: a persistent cache directory,
// metadata cached forever (the data sets are immutable during the run),
// the default read-ahead window. Credentials are passed in the standard AWS
// environment variables. bin is the csi-driver binary; extra flags come
// after the defaults, so they override them.
func NewBasin(env Env, bin string, extra ...string) System {
	return newBasin("basin", env, bin, extra...)
}

// NewBasinNoPrefetch is NewBasin with directory prefetch off
// (--prefetch=false), named basin-noprefetch: an A/B of the prefetch in
// one run.
func NewBasinNoPrefetch(env Env, bin string) System {
	return newBasin("basin-noprefetch", env, bin, "--prefetch=false")
}

// NewBasinKernel is NewBasin mounted read-only with kernel opens
// (--read-only --open-mode kernel), named basin-kernel: the open mode
// measured against the default in one run. Its writing phases are n/a.
func NewBasinKernel(env Env, bin string) System {
	s := newBasin("basin-kernel", env, bin, "--read-only", "--open-mode", "kernel")
	s.r.readOnly = true
	return s
}

// NewBasinAsync is NewBasin with uploads after close (--upload-mode
// async), named basin-async: an A/B of the upload mode in one run.
func NewBasinAsync(env Env, bin string) System {
	return newBasin("basin-async", env, bin, "--upload-mode", "async")
}

// NewBasinNamed is NewBasin under another column name, for an A/B of two
// binaries in one run (basin-bench -basin-b).
func NewBasinNamed(env Env, name, bin string, extra ...string) System {
	return newBasin(name, env, bin, extra...)
}

func newBasin(name string, env Env, bin string, extra ...string) *fuseSystem {
	return newFuseSystem(env, recipe{
		name:        name,
		backend:     BackendS3,
		bin:         bin,
		installHint: "go build -o " + bin + " ./cmd/csi-driver",
		env: []string{
			"AWS_ACCESS_KEY_ID=" + env.S3.AccessKey,
			"AWS_SECRET_ACCESS_KEY=" + env.S3.SecretKey,
			"AWS_REGION=" + env.S3.Region,
		},
		check: checkBasinMount,
		note:  "keys in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY",
		args: func(mnt, cache, _ string) []string {
			args := []string{"mount",
				"--endpoint", env.S3.Endpoint,
				"--region", env.S3.Region,
				"--path-style",
				"--cache-dir", cache,
				"--cache-size", "100Gi",
				"--metadata-ttl", "-1",
				"--negative-metadata-ttl", "5m",
				"--foreground",
			}
			return append(append(args, extra...), "s3://"+env.S3.Bucket, mnt)
		},
	})
}

// checkBasinMount asks `csi-driver mount --help` whether the mount command
// exists yet; until the FUSE issue lands it does not, and Basin is n/a.
func checkBasinMount(ctx context.Context, bin string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, "mount", "--help").CombinedOutput()
	if !strings.Contains(string(out), "cache-dir") {
		return fmt.Errorf("%w: `csi-driver mount` is not implemented yet (its --help lists no --cache-dir)", ErrUnavailable)
	}
	return nil
}
