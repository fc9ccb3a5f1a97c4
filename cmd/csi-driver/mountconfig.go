package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/basin-csi/basin/pkg/cache"
	"github.com/basin-csi/basin/pkg/fuse"
	"github.com/basin-csi/basin/pkg/objstore"
)

// mountFlags are the raw flag values of `csi-driver mount`.
type mountFlags struct {
	endpoint, region                 string
	pathStyle                        bool
	cacheDir, volumeID               string
	cacheSize, cacheBlockSize        int64
	readAhead                        int64
	maxParallelFetches               int
	metadataTTL, negativeTTL         time.Duration
	opTimeout                        time.Duration
	readOnly, allowOther, foreground bool
	uid, gid                         int64
	fileMode, dirMode                os.FileMode
	fd                               int
	session                          string
	resume                           bool
	credentialsFile                  string
	debug, disablePassthrough        bool
}

// defaultMountFlags are the defaults shown by --help.
func defaultMountFlags() mountFlags {
	return mountFlags{
		cacheSize:          10 << 30,
		cacheBlockSize:     cache.DefaultBlockSize,
		readAhead:          fuse.DefaultReadAhead,
		maxParallelFetches: cache.DefaultMaxParallelFetches,
		metadataTTL:        time.Minute,
		negativeTTL:        5 * time.Second,
		opTimeout:          fuse.DefaultOpTimeout,
		uid:                -1,
		gid:                -1,
		fileMode:           fuse.DefaultFileMode,
		dirMode:            fuse.DefaultDirMode,
		fd:                 -1,
	}
}

// sessionFileName is the file in the cache directory where an fd-mode
// mount records its kernel connection for a successor (--session).
const sessionFileName = "fuse-session.json"

// mountConfig is everything a mount needs, built and validated in one place
// (newMountConfig) from the flags and arguments.
type mountConfig struct {
	Source     source
	Mountpoint string // "/dev/fd/N" in fd mode
	Store      objstore.Config
	CacheDir   string
	Cache      cache.Options
	FS         fuse.Config
	Mount      fuse.MountOptions
	Debug      bool
	// CredentialsFile is a 0600 file the node plugin wrote for this
	// process (read and deleted at start); "" means the default chain.
	CredentialsFile string
}

// newMountConfig validates flags and arguments and reports every problem.
func newMountConfig(f mountFlags, args []string) (mountConfig, error) {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	var c mountConfig
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
		c.Source = src
	}
	switch {
	case f.fd >= 0 && f.fd < 3:
		bad("--fd %d: descriptors 0-2 are stdin, stdout and stderr", f.fd)
	case f.fd >= 3:
		c.Mountpoint = fmt.Sprintf("/dev/fd/%d", f.fd)
	case len(args) < 2:
		bad("missing MOUNTPOINT (or --fd)")
	default:
		mp, err := filepath.Abs(args[1])
		if err != nil {
			bad("mountpoint %q: %v", args[1], err)
		} else if st, err := os.Stat(mp); err != nil || !st.IsDir() {
			bad("mountpoint %q is not an existing directory", mp)
		}
		c.Mountpoint = mp
	}
	if f.endpoint != "" {
		if u, err := url.Parse(f.endpoint); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			bad("--endpoint %q: want http(s)://host[:port]", f.endpoint)
		} else if u.User != nil {
			bad("--endpoint: credentials do not belong in the URL")
		}
	}
	if f.cacheBlockSize < 4096 || f.cacheBlockSize%4096 != 0 {
		bad("--cache-block-size %d: want a multiple of 4Ki", f.cacheBlockSize)
	}
	if f.maxParallelFetches < 1 {
		bad("--max-parallel-fetches %d: want at least 1", f.maxParallelFetches)
	}
	if f.opTimeout <= 0 {
		bad("--op-timeout %v: want a positive duration", f.opTimeout)
	}
	uid, gid := f.uid, f.gid
	if uid < 0 {
		uid = int64(os.Geteuid())
	}
	if gid < 0 {
		gid = int64(os.Getegid())
	}
	if uid > 1<<32-2 || gid > 1<<32-2 {
		bad("--uid/--gid out of range")
	}
	volumeID := f.volumeID
	if volumeID == "" {
		sum := sha256.Sum256([]byte(c.Source.String() + "\x00" + f.endpoint))
		volumeID = "manual-" + hex.EncodeToString(sum[:8])
	}
	cacheDir := f.cacheDir
	if cacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			bad("no --cache-dir and no user cache directory: %v", err)
		}
		cacheDir = filepath.Join(base, "basin", volumeID)
	}

	c.Store = objstore.Config{
		Backend: c.Source.Backend, Bucket: c.Source.Bucket,
		Endpoint: f.endpoint, Region: f.region, PathStyle: f.pathStyle,
		RequestTimeout: min(objstore.DefaultRequestTimeout, f.opTimeout),
	}
	if len(errs) == 0 {
		if err := c.Store.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	origin := c.Source.String()
	if f.endpoint != "" {
		origin += " @" + f.endpoint
	}
	c.CacheDir = cacheDir
	c.Cache = cache.Options{
		VolumeID: volumeID, Origin: origin,
		BlockSize: f.cacheBlockSize, Capacity: f.cacheSize,
		MetadataTTL: f.metadataTTL, NegativeTTL: f.negativeTTL,
		MaxParallelFetches: f.maxParallelFetches,
	}
	c.FS = fuse.Config{
		VolumeID: volumeID, ReadOnly: f.readOnly,
		UID: uint32(uid), GID: uint32(gid), FileMode: f.fileMode, DirMode: f.dirMode,
		MetadataTTL: f.metadataTTL, NegativeTTL: f.negativeTTL,
		ReadAhead: f.readAhead, OpTimeout: f.opTimeout,
		DisablePassthrough: f.disablePassthrough,
	}
	if f.readAhead == 0 {
		c.FS.ReadAhead = -1 // 0 on the command line means "off"
	}
	if err := c.FS.Validate(); err != nil {
		errs = append(errs, err)
	}
	c.Mount = fuse.MountOptions{AllowOther: f.allowOther, FsName: "basin:" + c.Source.String(), Debug: f.debug}
	switch {
	case (f.session != "" || f.resume) && f.fd < 0:
		bad("--session and --resume need --fd")
	case f.resume && f.session == "":
		bad("--resume needs --session: the connection to take over")
	case f.session != "":
		c.Mount.Session = fuse.SessionOptions{File: filepath.Join(cacheDir, sessionFileName), ID: f.session, Resume: f.resume}
	}
	c.Debug = f.debug
	c.CredentialsFile = f.credentialsFile
	return c, errors.Join(errs...)
}
