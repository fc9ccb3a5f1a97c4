package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/mountspec"
)

// quantityValue is a flag holding a byte size written as a Kubernetes
// quantity, parsed exactly like the volume attributes.
type quantityValue struct{ p *int64 }

func (v quantityValue) String() string {
	if v.p == nil {
		return ""
	}
	return volumeattr.FormatSize(*v.p)
}

func (v quantityValue) Set(s string) error {
	n, err := volumeattr.ParseSize(s)
	if err != nil {
		return err
	}
	*v.p = n
	return nil
}

// ttlValue is a flag holding a TTL ("90s", "0", "-1").
type ttlValue struct{ p *time.Duration }

func (v ttlValue) String() string {
	if v.p == nil {
		return ""
	}
	return volumeattr.FormatTTL(*v.p)
}

func (v ttlValue) Set(s string) error {
	d, err := volumeattr.ParseTTL(s)
	if err != nil {
		return err
	}
	*v.p = d
	return nil
}

// modeValue is a flag holding octal permission bits.
type modeValue struct{ p *os.FileMode }

func (v modeValue) String() string {
	if v.p == nil {
		return ""
	}
	return fmt.Sprintf("%04o", uint32(*v.p))
}

func (v modeValue) Set(s string) error {
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil || n > 0o777 {
		return fmt.Errorf("invalid mode %q: want octal permission bits up to 0777", s)
	}
	*v.p = os.FileMode(n)
	return nil
}

type openModeValue struct{ p *mountspec.OpenMode }

func (v openModeValue) String() string {
	if v.p == nil {
		return ""
	}
	return string(*v.p)
}

func (v openModeValue) Set(s string) error {
	if m := mountspec.OpenMode(s); m.Valid() {
		*v.p = m
		return nil
	}
	return fmt.Errorf("invalid open mode %q: want one of %q", s, mountspec.OpenModes())
}

// mountFlagSet declares the flags of `csi-driver mount` into f.
func mountFlagSet(f *mountFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("mount", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned; --help prints mountUsage
	s := &f.spec
	fs.StringVar(&s.Endpoint, "endpoint", s.Endpoint, "object store `URL` (MinIO, OSS region endpoint, fake-gcs-server); default: the backend's own")
	fs.StringVar(&s.Region, "region", s.Region, "S3/OSS signing `region`; default: from the environment/profile, else us-east-1")
	fs.BoolVar(&s.PathStyle, "path-style", s.PathStyle, "address S3 buckets as ENDPOINT/BUCKET (MinIO and most S3-compatible stores)")
	fs.StringVar(&f.cacheDir, "cache-dir", f.cacheDir, "cache `directory` (created 0700; kept across mounts); default: $XDG_CACHE_HOME/basin/VOLUME-ID")
	fs.StringVar(&f.volumeID, "volume-id", f.volumeID, "`name` of the volume in logs and in the default cache directory; default: derived from SOURCE")
	fs.Var(quantityValue{&s.CacheSize}, "cache-size", "cap on the cache's disk use, a Kubernetes `quantity` (0: only keep 5% of the disk free)")
	fs.Var(quantityValue{&s.CacheBlockSize}, "cache-block-size", "cache block `size` (4Ki to 1Gi, a multiple of 4Ki)")
	fs.Var(ttlValue{&s.MetadataTTL}, "metadata-ttl", "how long attributes and listings are trusted: a Go `duration`, 0 (always ask the bucket) or -1 (forever: immutable data)")
	fs.Var(ttlValue{&s.NegativeMetadataTTL}, "negative-metadata-ttl", "how long \"no such file\" is trusted (`duration`, 0 or -1)")
	fs.Var(quantityValue{&s.ReadAhead}, "read-ahead", "largest prefetch window of a sequential reader (`quantity`; 0 disables prefetching)")
	fs.IntVar(&s.MaxParallelFetches, "max-parallel-fetches", s.MaxParallelFetches, "concurrent GET requests of this mount (1 to 1024)")
	fs.BoolVar(&s.Prefetch, "prefetch", s.Prefetch, "fetch the other small files of a directory a reader opens files of in the background (--prefetch=false: off)")
	fs.Var(quantityValue{&s.PrefetchBudget}, "prefetch-budget", "bound on the bytes prefetched that no reader opened since (`quantity`)")
	fs.DurationVar(&s.OpTimeout, "op-timeout", s.OpTimeout, "bound on the bucket requests of one file system operation (past it the operation fails with EIO), and on the check of the bucket at mount")
	fs.BoolVar(&s.ReadOnly, "read-only", s.ReadOnly, "mount read-only: every change fails with EROFS")
	fs.Var(openModeValue{&s.OpenMode}, "open-mode", "who opens regular files: server (every open is a FUSE request) or kernel (the kernel opens them itself, so a file in the page cache opens without a request; needs --read-only)")
	fs.Int64Var(&s.UID, "uid", s.UID, "owner `uid` of all files (-1: the mounting user)")
	fs.Int64Var(&s.GID, "gid", s.GID, "group `gid` of all files (-1: the mounting user's group)")
	fs.Var(modeValue{&s.FileMode}, "file-mode", "permission bits of files (`octal`)")
	fs.Var(modeValue{&s.DirMode}, "dir-mode", "permission bits of directories (`octal`)")
	fs.StringVar(&f.mountOptions, "mount-options", f.mountOptions, "comma-separated mount `options`, as the mountOptions volume attribute: "+strings.Join(mountspec.AcceptedOptions(), ", "))
	fs.BoolVar(&f.allowOther, "allow-other", f.allowOther, "let other users access the mount (non-root needs user_allow_other in /etc/fuse.conf)")
	fs.BoolVar(&f.foreground, "foreground", f.foreground, "stay in the foreground (always the case: run it under a supervisor or with & to background it)")
	fs.IntVar(&f.fd, "fd", f.fd, "serve an already mounted /dev/fuse descriptor `N` inherited from the parent instead of mounting MOUNTPOINT; the mount is left to the parent at exit")
	fs.StringVar(&f.session, "session", f.session, "with --fd: `ID` of the kernel connection; record its negotiation in the cache directory so that a successor can take it over")
	fs.BoolVar(&f.resume, "resume", f.resume, "with --fd and --session: take over the connection from a server that died, without a new INIT, and have the kernel resend the requests it left unanswered")
	fs.BoolVar(&f.noBucketCheck, "no-bucket-check", f.noBucketCheck, "with --fd: serve without checking the bucket first (the node plugin's remount heal of a volume pods already use: what is cached stays readable while the store is down)")
	fs.IntVar(&f.standbyFD, "standby-fd", f.standbyFD, "with --resume: start as a standby: open the store, then wait until a byte arrives on the inherited descriptor `N` (the node plugin's go-ahead once the serving process died) before taking the connection over; exit when N is closed first")
	fs.StringVar(&f.specFile, "spec-file", f.specFile, "with --fd: read the mount spec and the store's credentials from this 0600 `file` and delete it (how the node plugin hands a volume over; replaces SOURCE and the settings flags, and no secret is ever on the command line)")
	fs.BoolVar(&f.disablePassthrough, "disable-passthrough", f.disablePassthrough, "serve all reads in user space even where FUSE passthrough works")
	fs.BoolVar(&f.debug, "debug", f.debug, "log every FUSE request and verbose cache events")
	return fs
}

const mountSynopsis = `Usage: csi-driver mount [flags] SOURCE MOUNTPOINT
       csi-driver mount [flags] --fd N SOURCE
       csi-driver mount --fd N --spec-file FILE [process flags]

Mounts a bucket, or a prefix of one, as a POSIX file system with a local
cache: the first read of a byte goes to the bucket, later reads come from
the cache directory (also after a remount). The bucket is checked before
the mount: a missing bucket, refused credentials or an unreachable store
fail it within --op-timeout, with exit code 3, 4 or 5.

SOURCE is one of
  s3://BUCKET[/PREFIX]     Amazon S3 or an S3-compatible store (--endpoint, --path-style)
  oss://BUCKET[/PREFIX]    Alibaba Cloud OSS (--endpoint https://oss-REGION.aliyuncs.com)
  gs://BUCKET[/PREFIX]     Google Cloud Storage
  file:///ABS/DIR          a local directory playing the bucket

Credentials never go on the command line. They come from the standard
places: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN,
AWS_PROFILE and ~/.aws/{credentials,config}, web identity (IRSA) and
instance metadata for s3:// and oss://; GOOGLE_APPLICATION_CREDENTIALS or
the application default credentials for gs://; or, from the node plugin,
the --spec-file that is deleted once read.

The command stays in the foreground and serves the mount until SIGINT or
SIGTERM, then unmounts (with --fd it just stops serving). Sizes are
Kubernetes quantities (512Mi, 10Gi); durations are Go durations (90s, 2h).

Flags:
`

// mountUsage writes the complete help of `csi-driver mount`.
func mountUsage(w io.Writer) {
	f := defaultMountFlags()
	fs := mountFlagSet(&f)
	_, _ = fmt.Fprint(w, mountSynopsis)
	fs.VisitAll(func(fl *flag.Flag) {
		name, usage := flag.UnquoteUsage(fl)
		line := "  --" + fl.Name
		if name != "" {
			line += " " + name
		}
		_, _ = fmt.Fprintln(w, line)
		_, _ = fmt.Fprintf(w, "        %s", usage)
		if fl.DefValue != "" && fl.DefValue != "false" {
			_, _ = fmt.Fprintf(w, " (default %s)", fl.DefValue)
		}
		_, _ = fmt.Fprintln(w)
	})
}

// parseMountArgs parses flags placed anywhere among the arguments.
func parseMountArgs(args []string) (mountConfig, error) {
	f := defaultMountFlags()
	fs := mountFlagSet(&f)

	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return mountConfig{}, err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		if args[0] == "--" {
			positional = append(positional, args[1:]...)
			break
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
	for _, a := range positional {
		if strings.HasPrefix(a, "-") {
			return mountConfig{}, fmt.Errorf("argument %q looks like a flag after --", a)
		}
	}
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	return newMountConfig(f, positional)
}
