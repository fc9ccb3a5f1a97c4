package main

import (
	"bytes"
	"context"
	flagpkg "flag"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/mountdefaults"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

func TestParseMountArgs(t *testing.T) {
	mnt := t.TempDir()
	for _, tc := range []struct {
		name  string
		args  []string
		check func(t *testing.T, c mountConfig)
	}{
		{"defaults", []string{"s3://b/p", mnt}, func(t *testing.T, c mountConfig) {
			want := mountspec.Default()
			want.Bucket, want.Prefix = "b", "p/"
			if !reflect.DeepEqual(c.Spec, want) {
				t.Errorf("spec %+v, want %+v", c.Spec, want)
			}
			if c.Mountpoint != mnt || c.FS.ReadOnly || c.FS.MetadataTTL != time.Minute || c.Cache.CacheSize != 10<<30 || c.Cache.PrefetchBudget != 4<<30 {
				t.Errorf("config %+v", c)
			}
			if c.FS.UID != -1 || c.FS.GID != -1 || c.FS.FileMode != 0o644 || c.FS.DirMode != 0o755 {
				t.Errorf("ownership %d %o %o", c.FS.UID, c.FS.FileMode, c.FS.DirMode)
			}
			if !strings.HasPrefix(c.VolumeID, "manual-") || c.Cache.VolumeID != c.VolumeID || !strings.HasSuffix(c.CacheDir, c.VolumeID) {
				t.Errorf("volume %q cache dir %q", c.Cache.VolumeID, c.CacheDir)
			}
		}},
		{"every flag, after the arguments too", []string{
			"--endpoint", "http://127.0.0.1:9000", "--region", "eu-west-1", "--path-style",
			"--cache-dir", "/var/cache/x", "--cache-size", "1Gi", "--cache-block-size", "1Mi",
			"gs://bkt", mnt,
			"--metadata-ttl", "-1", "--negative-metadata-ttl", "0", "--read-ahead", "0",
			"--read-only", "--uid", "1000", "--gid", "2000", "--file-mode", "0600", "--dir-mode", "700",
			"--allow-other", "--foreground", "--op-timeout", "5s", "--debug", "--max-parallel-fetches", "3",
			"--disable-passthrough", "--volume-id", "vol-1", "--mount-options", "noexec,noatime", "--open-mode", "kernel",
			"--prefetch=false", "--prefetch-budget", "1Gi",
		}, func(t *testing.T, c mountConfig) {
			if c.Spec.Prefetch || c.Spec.PrefetchBudget != 1<<30 || c.Cache.Prefetch || c.Cache.PrefetchBudget != 1<<30 {
				t.Errorf("prefetch: spec %v %d, cache budget %d; want off", c.Spec.Prefetch, c.Spec.PrefetchBudget, c.Cache.PrefetchBudget)
			}
			want := objstore.Config{Backend: objstore.BackendGCS, Bucket: "bkt", Endpoint: "http://127.0.0.1:9000",
				Region: "eu-west-1", PathStyle: true, RequestTimeout: 5 * time.Second}
			if got := c.Spec.StoreConfig(); got != want {
				t.Errorf("store %+v, want %+v", got, want)
			}
			if c.CacheDir != "/var/cache/x" || c.Cache.CacheSize != 1<<30 || c.Cache.CacheBlockSize != 1<<20 ||
				c.Cache.MetadataTTL != -1 || c.Cache.NegativeMetadataTTL != 0 || c.Cache.MaxParallelFetches != 3 || c.Cache.VolumeID != "vol-1" {
				t.Errorf("cache %q %+v", c.CacheDir, c.Cache)
			}
			if !c.FS.ReadOnly || c.FS.UID != 1000 || c.FS.GID != 2000 || c.FS.FileMode != 0o600 || c.FS.DirMode != 0o700 ||
				c.FS.ReadAhead != 0 || c.FS.OpTimeout != 5*time.Second || !c.FS.DisablePassthrough || c.FS.MetadataTTL != -1 ||
				c.FS.OpenMode != mountdefaults.OpenKernel || c.Spec.OpenMode != mountdefaults.OpenKernel {
				t.Errorf("fs %+v", c.FS)
			}
			if !c.Mount.AllowOther || !c.Mount.Debug || c.Mount.FsName != "basin:gs://bkt/" || !c.Mount.NoExec || !c.Mount.NoAtime {
				t.Errorf("mount %+v", c.Mount)
			}
		}},
		{"standby", []string{"--fd", "3", "--session", "s", "--resume", "--standby-fd", "4", "file:///data"}, func(t *testing.T, c mountConfig) {
			if c.StandbyFD != 4 || !c.Resume || !c.Mount.Session.Resume {
				t.Errorf("config %+v", c)
			}
		}},
		{"fd mode needs no mountpoint", []string{"--fd", "7", "file:///data"}, func(t *testing.T, c mountConfig) {
			if c.Mountpoint != "/dev/fd/7" || c.Spec.Backend != objstore.BackendFile || c.Spec.Bucket != "/data" {
				t.Errorf("config %+v", c)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseMountArgs(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestParseMountArgsErrors(t *testing.T) {
	mnt := t.TempDir()
	for name, args := range map[string][]string{
		"no arguments":         {},
		"no mountpoint":        {"s3://b"},
		"too many":             {"s3://b", mnt, "extra"},
		"missing mountpoint":   {"s3://b", mnt + "/nope"},
		"bad source":           {"ftp://b", mnt},
		"secret in source":     {"s3://k:s@b", mnt},
		"bad size":             {"--cache-size", "10GB", "s3://b", mnt},
		"bad block size":       {"--cache-block-size", "1000", "s3://b", mnt},
		"bad ttl":              {"--metadata-ttl", "-5s", "s3://b", mnt},
		"bad mode":             {"--file-mode", "0999", "s3://b", mnt},
		"mode too wide":        {"--dir-mode", "4755", "s3://b", mnt},
		"bad endpoint":         {"--endpoint", "localhost:9000", "s3://b", mnt},
		"stdio fd":             {"--fd", "1", "s3://b"},
		"zero op timeout":      {"--op-timeout", "0s", "s3://b", mnt},
		"unknown flag":         {"--access-key", "AKIA", "s3://b", mnt},
		"no parallel fetches":  {"--max-parallel-fetches", "0", "s3://b", mnt},
		"block size too big":   {"--cache-block-size", "2Gi", "s3://b", mnt},
		"unknown option":       {"--mount-options", "noexec,suid", "s3://b", mnt},
		"spec file, no fd":     {"--spec-file", "/nonexistent"},
		"spec file and flags":  {"--fd", "3", "--spec-file", "/nonexistent", "--cache-size", "1Gi"},
		"spec file and source": {"--fd", "3", "--spec-file", "/nonexistent", "s3://b"},
		"standby, no resume":   {"--fd", "3", "--session", "s", "--standby-fd", "4", "s3://b"},
		"standby on the fd":    {"--fd", "3", "--session", "s", "--resume", "--standby-fd", "3", "s3://b"},
		"standby on stdio":     {"--fd", "3", "--session", "s", "--resume", "--standby-fd", "2", "s3://b"},
		"kernel opens, rw":     {"--open-mode", "kernel", "s3://b", mnt},
		"unknown open mode":    {"--open-mode", "client", "--read-only", "s3://b", mnt},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := parseMountArgs(args); err == nil {
				t.Errorf("parseMountArgs(%q) accepted", args)
			}
		})
	}
}

func TestMountHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := runMount(context.Background(), []string{"--help"}, &stdout, &stderr); err != nil {
		t.Fatalf("--help: %v", err)
	}
	help := stdout.String()
	f := defaultMountFlags()
	fs := mountFlagSet(&f)
	n := 0
	fs.VisitAll(func(fl *flagpkg.Flag) {
		n++
		if !strings.Contains(help, "--"+fl.Name) {
			t.Errorf("--help does not describe --%s", fl.Name)
		}
	})
	for _, want := range []string{"s3://", "oss://", "gs://", "file:///", "AWS_ACCESS_KEY_ID", "GOOGLE_APPLICATION_CREDENTIALS", "SIGTERM"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help does not mention %s", want)
		}
	}
	if n < 20 {
		t.Errorf("only %d flags", n)
	}
}

// TestSpecFileRefusesSettingsFlags: with --spec-file, the spec is the
// file's; a settings flag beside it is an error naming the flag, and the
// file is not read.
func TestSpecFileRefusesSettingsFlags(t *testing.T) {
	spec := mountspec.Default()
	spec.Bucket = "b"
	path, err := mountspec.WriteHandoffFile(t.TempDir()+"/h", mountspec.Handoff{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	_, err = parseMountArgs([]string{"--fd", "3", "--spec-file", path, "--uid", "7"})
	if err == nil || !strings.Contains(err.Error(), "--uid") {
		t.Errorf("parseMountArgs = %v, want an error naming --uid", err)
	}
	c, err := parseMountArgs([]string{"--fd", "3", "--spec-file", path, "--volume-id", "v", "--cache-dir", "/c"})
	if err != nil || !reflect.DeepEqual(c.Spec, spec) || c.HandoffDir != filepath.Dir(path) {
		t.Errorf("parseMountArgs = %+v, %v", c.Spec, err)
	}
}

// TestSharedCacheFlagAndCredentials: --shared-cache names the tier; its
// keys come from the environment, never from a flag, and go together.
func TestSharedCacheFlagAndCredentials(t *testing.T) {
	mnt := t.TempDir()
	args := []string{"--shared-cache", "http://127.0.0.1:9100/tier/team", "s3://b", mnt}
	t.Setenv(envSharedCacheKeyID, "TIERKEY")
	t.Setenv(envSharedCacheSecret, "tier-secret")
	c, err := parseMountArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	cfg, prefix, ok := c.Spec.SharedCacheConfig()
	if !ok || cfg.Bucket != "tier" || prefix != "team/" || c.SharedCacheCredentials.AccessKeyID != "TIERKEY" ||
		c.SharedCacheCredentials.SecretAccessKey != "tier-secret" || !c.Credentials.IsZero() {
		t.Errorf("tier %+v %q %v, credentials %v", cfg, prefix, ok, c.SharedCacheCredentials)
	}
	t.Setenv(envSharedCacheSecret, "")
	if _, err := parseMountArgs(args); err == nil || !strings.Contains(err.Error(), envSharedCacheSecret) {
		t.Errorf("half a key pair: %v; want an error naming %s", err, envSharedCacheSecret)
	}
	t.Setenv(envSharedCacheKeyID, "")
	if _, err := parseMountArgs([]string{"--shared-cache", "tier:9100", "s3://b", mnt}); err == nil || !strings.Contains(err.Error(), "sharedCache") {
		t.Errorf("bad --shared-cache: %v; want an error naming the setting", err)
	}
}
