package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/basin-csi/basin/pkg/cache"
	"github.com/basin-csi/basin/pkg/fuse"
	"github.com/basin-csi/basin/pkg/fuse/takeover"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// mountFlags are the raw flag values of `csi-driver mount`. The settings
// flags (mountspec.Spec.AddFlags, named in specFlags) write straight into
// spec, which starts from mountspec.Default.
type mountFlags struct {
	spec      mountspec.Spec
	specFlags []string

	// Process flags: who this process is and how it serves.
	cacheDir, volumeID        string
	allowOther, foreground    bool
	fd                        int
	session                   string
	resume, noBucketCheck     bool
	standbyFD                 int
	specFile                  string
	debug, disablePassthrough bool
	cpuProfile                string

	// set names the flags given on the command line.
	set map[string]bool
}

// defaultMountFlags are the defaults shown by --help.
func defaultMountFlags() mountFlags {
	return mountFlags{spec: mountspec.Default(), fd: -1}
}

// The environment variables of the shared cache tier's access key pair of
// a mount by hand.
const (
	envSharedCacheKeyID  = "BASIN_SHARED_CACHE_ACCESS_KEY_ID"
	envSharedCacheSecret = "BASIN_SHARED_CACHE_SECRET_ACCESS_KEY"
)

// sessionFileName is the file in the cache directory where an fd-mode
// mount records its kernel connection for a successor (--session).
const sessionFileName = "fuse-session.json"

// mountConfig is everything a mount needs, built and validated in one place
// (newMountConfig) from the flags and arguments, or from the node plugin's
// hand-off file.
type mountConfig struct {
	Spec        mountspec.Spec
	Credentials objstore.Credentials // zero: the backend's default chain
	// SharedCacheCredentials are the shared cache tier's (zero: the
	// default chain): from the hand-off file, or for a mount by hand from
	// $BASIN_SHARED_CACHE_ACCESS_KEY_ID and
	// $BASIN_SHARED_CACHE_SECRET_ACCESS_KEY (never a flag: argv is
	// public).
	SharedCacheCredentials objstore.Credentials
	// HandoffDir is the directory of the hand-off file ("" without one):
	// where the node plugin puts the volume's credential rotations.
	HandoffDir string
	VolumeID   string
	Mountpoint string // "/dev/fd/N" in fd mode
	CacheDir   string
	Cache      cache.Options
	FS         fuse.Config
	Mount      fuse.MountOptions
	Debug      bool
	// CPUProfile ("": none) is the file a Go CPU profile of the whole
	// process life is written to, for performance work.
	CPUProfile string
	// Resume takes over a live connection: the bucket is not checked
	// again (the mount serves already; a hiccup must not fail it).
	Resume bool
	// NoBucketCheck serves without checking the bucket first: the remount
	// heal of a volume pods already use, which serves what is cached even
	// while the store is down.
	NoBucketCheck bool
	// StandbyFD (0: none) is the descriptor a standby waits on for the
	// go-ahead before it opens the cache and takes the connection over.
	StandbyFD int
}

// newMountConfig validates flags and arguments and reports every problem.
// With --spec-file it reads (and deletes) the hand-off file.
func newMountConfig(f mountFlags, args []string) (mountConfig, error) {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	var c mountConfig
	spec := f.spec
	positional := args
	if f.specFile != "" {
		for _, name := range f.specFlags { // --spec-file replaces all of them
			if f.set[name] {
				bad("--%s: with --spec-file the mount spec comes from the file", name)
			}
		}
		if f.fd < 0 {
			bad("--spec-file needs --fd: the node plugin mounts, this process serves")
		}
		if len(args) > 0 {
			bad("unexpected arguments %q: with --spec-file the source comes from the file", args)
		}
		if len(errs) > 0 {
			return mountConfig{}, errors.Join(errs...) // the file stays for its writer to remove
		}
		h, err := mountspec.ReadHandoffFile(f.specFile)
		if err != nil {
			return mountConfig{}, err // the spec's own problems, nothing else is worth reporting
		}
		spec, c.Credentials, c.HandoffDir = h.Spec, h.Credentials, filepath.Dir(f.specFile)
		c.SharedCacheCredentials = h.SharedCacheCredentials
	} else {
		switch {
		case len(args) == 0:
			bad("missing SOURCE")
		case len(args) > 2:
			bad("too many arguments %q: want SOURCE MOUNTPOINT", args)
		}
		if len(args) > 0 {
			src, err := parseSource(args[0])
			if err != nil {
				errs = append(errs, err)
			}
			spec.Backend, spec.Bucket, spec.Prefix = src.Backend, src.Bucket, src.Prefix
			positional = args[1:]
		}
		c.SharedCacheCredentials = objstore.Credentials{AccessKeyID: os.Getenv(envSharedCacheKeyID),
			SecretAccessKey: os.Getenv(envSharedCacheSecret)}
		if (c.SharedCacheCredentials.AccessKeyID == "") != (c.SharedCacheCredentials.SecretAccessKey == "") {
			bad("$%s and $%s go together; one of them is missing", envSharedCacheKeyID, envSharedCacheSecret)
		}
		if err := spec.Validate(); err != nil && len(errs) == 0 {
			errs = append(errs, err)
		}
	}
	switch {
	case f.fd >= 0 && f.fd < 3:
		bad("--fd %d: descriptors 0-2 are stdin, stdout and stderr", f.fd)
	case f.fd >= 3:
		c.Mountpoint = fmt.Sprintf("/dev/fd/%d", f.fd)
	case len(positional) < 1:
		bad("missing MOUNTPOINT (or --fd)")
	default:
		mp, err := filepath.Abs(positional[0])
		if err != nil {
			bad("mountpoint %q: %v", positional[0], err)
		} else if st, err := os.Stat(mp); err != nil || !st.IsDir() {
			bad("mountpoint %q is not an existing directory", mp)
		}
		c.Mountpoint = mp
	}
	c.VolumeID = f.volumeID
	if c.VolumeID == "" {
		sum := sha256.Sum256([]byte(spec.SourceURL() + "\x00" + spec.Endpoint))
		c.VolumeID = "manual-" + hex.EncodeToString(sum[:8])
	}
	c.CacheDir = f.cacheDir
	if c.CacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			bad("no --cache-dir and no user cache directory: %v", err)
		}
		c.CacheDir = filepath.Join(base, "basin", c.VolumeID)
	}
	c.Spec = spec
	c.Cache, c.FS = runtimeConfig(spec, c.VolumeID)
	c.FS.DisablePassthrough = f.disablePassthrough
	if err := c.FS.Validate(); err != nil {
		errs = append(errs, err)
	}
	flags := spec.Flags()
	c.Mount = fuse.MountOptions{AllowOther: f.allowOther, FsName: "basin:" + spec.SourceURL(), Debug: f.debug,
		NoExec: flags.NoExec, NoAtime: flags.NoAtime}
	switch {
	case (f.session != "" || f.resume) && f.fd < 0:
		bad("--session and --resume need --fd")
	case f.noBucketCheck && f.fd < 0:
		bad("--no-bucket-check needs --fd")
	case f.resume && f.session == "":
		bad("--resume needs --session: the connection to take over")
	case f.standbyFD != 0 && !f.resume:
		bad("--standby-fd needs --resume: a standby takes a connection over")
	case f.standbyFD != 0 && (f.standbyFD < 3 || f.standbyFD == f.fd):
		bad("--standby-fd %d: want an inherited descriptor other than --fd", f.standbyFD)
	case f.session != "":
		c.Mount.Session = takeover.Options{File: filepath.Join(c.CacheDir, sessionFileName), ID: f.session, Resume: f.resume}
	}
	c.Debug, c.Resume, c.NoBucketCheck, c.StandbyFD = f.debug, f.resume, f.noBucketCheck, f.standbyFD
	c.CPUProfile = f.cpuProfile
	return c, errors.Join(errs...)
}

// runtimeConfig gives the cache and the file system the spec, each
// beside what only this process knows: the volume's ID and, for the
// cache, the origin its data files are keyed by. Each reads the settings
// it uses from the spec itself, so a new setting passes through here
// untouched.
func runtimeConfig(s mountspec.Spec, volumeID string) (cache.Options, fuse.Config) {
	origin := s.SourceURL()
	if s.Endpoint != "" {
		origin += " @" + s.Endpoint
	}
	return cache.Options{Spec: s, VolumeID: volumeID, Origin: origin}, fuse.Config{Spec: s, VolumeID: volumeID}
}
