package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// mountFlagSet declares the flags of `csi-driver mount` into f.
func mountFlagSet(f *mountFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("mount", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned; --help prints mountUsage
	f.specFlags = f.spec.AddFlags(fs)
	fs.StringVar(&f.cacheDir, "cache-dir", f.cacheDir, "cache `directory` (created 0700; kept across mounts); default: $XDG_CACHE_HOME/basin/VOLUME-ID")
	fs.StringVar(&f.volumeID, "volume-id", f.volumeID, "`name` of the volume in logs and in the default cache directory; default: derived from SOURCE")
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
	fs.StringVar(&f.cpuProfile, "cpu-profile", f.cpuProfile, "write a Go CPU profile of the process to `file` (created 0600) until it exits, for go tool pprof")
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
