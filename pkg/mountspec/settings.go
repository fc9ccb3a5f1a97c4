package mountspec

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/basin-csi/basin/internal/mountdefaults"
	"github.com/basin-csi/basin/pkg/objstore"
)

// setting is one mount setting: its key, how its text reads and is
// written, and the limits of its value. The table (settings) is the one
// place these are stated; ParseAttributes, Spec.Attributes, Validate and
// the flags of `csi-driver mount` (AddFlags) all read it.
type setting struct {
	key string
	// attribute: a volume attribute may set it.
	attribute bool
	// usage is the help of its `csi-driver mount` flag ("": no flag; a
	// word in backquotes names the flag's argument); boolean flags take
	// no argument.
	usage   string
	boolean bool
	// parse sets the setting in s from its text: the syntax and the
	// rules of the text form. The error says what is wrong without the
	// key (the caller adds it).
	parse func(s *Spec, v string) error
	// format returns the canonical text, "" for an unset value.
	format func(s Spec) string
	// check reports a value out of the setting's limits, without the
	// key; nil when every value parse gives is within them. Validate
	// runs it on every Spec, from any source.
	check func(s Spec) error
}

// settings returns the table of every mount setting, in documentation
// order.
func settings() []setting {
	return []setting{
		{key: KeyBackend, attribute: true, parse: parseBackend,
			format: func(s Spec) string { return string(s.Backend) }, check: checkBackend},
		{key: KeyBucket, attribute: true,
			parse:  func(s *Spec, v string) error { s.Bucket = v; return nil },
			format: func(s Spec) string { return s.Bucket }},
		{key: KeyPrefix, attribute: true, parse: parsePrefix,
			format: func(s Spec) string { return s.Prefix }, check: checkPrefix},
		textSetting(KeyEndpoint, true, "object store `URL` (MinIO, OSS region endpoint, fake-gcs-server); default: the backend's own",
			func(s *Spec) *string { return &s.Endpoint }, CheckEndpoint),
		textSetting(KeyRegion, true, "S3/OSS signing `region`; default: from the environment/profile, else us-east-1",
			func(s *Spec) *string { return &s.Region }, CheckRegion),
		boolSetting(KeyPathStyle, "address S3 buckets as ENDPOINT/BUCKET (MinIO and most S3-compatible stores)",
			func(s *Spec) *bool { return &s.PathStyle }),
		textSetting(KeyProject, false, "", func(s *Spec) *string { return &s.Project }, nil),
		sizeSetting(KeyCacheSize, "cap on the cache's disk use, a Kubernetes `quantity` (0: only keep 5% of the disk free)",
			func(s *Spec) *int64 { return &s.CacheSize }, 0, 1),
		sizeSetting(KeyCacheBlockSize, "cache block `size` (4Ki to 1Gi, a multiple of 4Ki)",
			func(s *Spec) *int64 { return &s.CacheBlockSize }, MinCacheBlockSize, MinCacheBlockSize, MaxCacheBlockSize),
		ttlSetting(KeyMetadataTTL, "how long attributes and listings are trusted: a Go `duration`, 0 (always ask the bucket) or -1 (forever: immutable data)",
			func(s *Spec) *time.Duration { return &s.MetadataTTL }),
		ttlSetting(KeyNegativeMetadataTTL, "how long \"no such file\" is trusted (`duration`, 0 or -1)",
			func(s *Spec) *time.Duration { return &s.NegativeMetadataTTL }),
		sizeSetting(KeyReadAhead, "largest prefetch window of a sequential reader (`quantity`; 0 disables prefetching)",
			func(s *Spec) *int64 { return &s.ReadAhead }, 0, 1),
		{key: KeyMaxParallelFetches, attribute: true, usage: "concurrent GET requests of this mount (1 to 1024)",
			parse:  parseMaxParallelFetches,
			format: func(s Spec) string { return strconv.Itoa(s.MaxParallelFetches) }, check: checkMaxParallelFetches},
		boolSetting(KeyPrefetch, "fetch the other small files of a directory a reader opens files of in the background (--prefetch=false: off)",
			func(s *Spec) *bool { return &s.Prefetch }),
		sizeSetting(KeyPrefetchBudget, "bound on the bytes prefetched that no reader opened since (`quantity`)",
			func(s *Spec) *int64 { return &s.PrefetchBudget }, 1, 1),
		bufferSizeSetting(),
		{key: KeyOpTimeout, usage: "bound on the bucket requests of one file system operation (past it the operation fails with EIO), and on the check of the bucket at mount",
			parse:  parseOpTimeout,
			format: func(s Spec) string { return s.OpTimeout.String() }, check: checkOpTimeout},
		idSetting(KeyUID, "owner `uid` of all files (default: the mounting user)", func(s *Spec) *int64 { return &s.UID }),
		idSetting(KeyGID, "group `gid` of all files (default: the mounting user's group)", func(s *Spec) *int64 { return &s.GID }),
		modeSetting(KeyFileMode, "permission bits of files (`octal`)", func(s *Spec) *os.FileMode { return &s.FileMode }),
		modeSetting(KeyDirMode, "permission bits of directories (`octal`)", func(s *Spec) *os.FileMode { return &s.DirMode }),
		boolSetting(KeyReadOnly, "mount read-only: every change fails with EROFS", func(s *Spec) *bool { return &s.ReadOnly }),
		{key: KeyOpenMode, attribute: true, usage: "who opens regular files: server (every open is a FUSE request) or kernel (the kernel opens them itself, so a file in the page cache opens without a request; needs --read-only)",
			parse:  parseOpenMode,
			format: func(s Spec) string { return string(s.OpenMode) }, check: checkOpenMode},
		{key: KeyUploadMode, attribute: true, usage: "when a written file goes to the bucket: sync (inside close) or async (close returns once the content is staged durably on the node's disk; the upload follows in the background; fsync and unmount wait for it)",
			parse:  parseUploadMode,
			format: func(s Spec) string { return string(s.UploadMode) }, check: checkUploadMode},
		{key: KeyMountOptions, attribute: true, usage: "comma-separated mount `options`, as the mountOptions volume attribute: " + strings.Join(AcceptedOptions(), ", "),
			parse:  parseMountOptions,
			format: func(s Spec) string { return strings.Join(s.MountOptions, ",") }, check: checkMountOptions},
		boolSetting(KeyRcloneLinks, "symbolic links as rclone --links stores them: object NAME.rclonelink, whose body is the target, is the link NAME",
			func(s *Spec) *bool { return &s.RcloneLinks }),
		textSetting(KeySharedCache, true, "shared cache tier read before the bucket: an S3-compatible `URL` http(s)://host[:port]/bucket[/prefix] (path-style) or s3://bucket[/prefix] (Amazon S3, S3 Express One Zone; virtual-hosted) (credentials: $BASIN_SHARED_CACHE_ACCESS_KEY_ID and $BASIN_SHARED_CACHE_SECRET_ACCESS_KEY, or the default chain)",
			func(s *Spec) *string { return &s.SharedCache }, CheckSharedCache),
		textSetting(KeySharedCacheRegion, true, "signing `region` of the shared cache tier; default: the region setting",
			func(s *Spec) *string { return &s.SharedCacheRegion }, CheckRegion),
	}
}

func parseBackend(s *Spec, v string) error {
	t := *s
	t.Backend = objstore.Backend(v)
	if err := checkBackend(t); err != nil {
		return err
	}
	s.Backend = t.Backend
	return nil
}

func checkBackend(s Spec) error {
	for _, b := range objstore.Backends {
		if s.Backend == b {
			return nil
		}
	}
	return fmt.Errorf("%q is not one of %v", s.Backend, objstore.Backends)
}

func parsePrefix(s *Spec, v string) error {
	p, err := CleanPrefix(v)
	if err != nil {
		return fmt.Errorf("%q: %w", v, err)
	}
	s.Prefix = p
	return nil
}

func checkPrefix(s Spec) error {
	if p := s.Prefix; p != "" && (p[0] == '/' || p[len(p)-1] != '/') {
		return fmt.Errorf("%q: want no leading and one trailing /", p)
	}
	return nil
}

func parseMaxParallelFetches(s *Spec, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("%q: want an integer from 1 to %d", v, MaxParallelFetches)
	}
	s.MaxParallelFetches = n
	return nil
}

func checkMaxParallelFetches(s Spec) error {
	if n := s.MaxParallelFetches; n < 1 || n > MaxParallelFetches {
		return fmt.Errorf("%d: want an integer from 1 to %d", n, MaxParallelFetches)
	}
	return nil
}

func parseOpTimeout(s *Spec, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q: want a positive Go duration such as 30s", v)
	}
	s.OpTimeout = d
	return nil
}

func checkOpTimeout(s Spec) error {
	if s.OpTimeout <= 0 {
		return fmt.Errorf("%v: want a positive duration", s.OpTimeout)
	}
	return nil
}

func parseOpenMode(s *Spec, v string) error {
	if !mountdefaults.OpenMode(v).Valid() {
		return fmt.Errorf("%q: want one of %q", v, mountdefaults.OpenModes())
	}
	s.OpenMode = mountdefaults.OpenMode(v)
	return nil
}

// checkOpenMode accepts "" too: a hand-off of an older release (OpenServer).
func checkOpenMode(s Spec) error {
	if s.OpenMode != "" && !s.OpenMode.Valid() {
		return fmt.Errorf("%q: want one of %q", s.OpenMode, mountdefaults.OpenModes())
	}
	return nil
}

func parseUploadMode(s *Spec, v string) error {
	if !mountdefaults.UploadMode(v).Valid() {
		return fmt.Errorf("%q: want one of %q", v, mountdefaults.UploadModes())
	}
	s.UploadMode = mountdefaults.UploadMode(v)
	return nil
}

// checkUploadMode accepts "" too: a hand-off of an older release
// (UploadSync).
func checkUploadMode(s Spec) error {
	if s.UploadMode != "" && !s.UploadMode.Valid() {
		return fmt.Errorf("%q: want one of %q", s.UploadMode, mountdefaults.UploadModes())
	}
	return nil
}

// parseMountOptions reads the list; checkMountOptions says which options
// there are.
func parseMountOptions(s *Spec, v string) error {
	if len(v) > MaxMountOptionsLength {
		return fmt.Errorf("longer than %d bytes", MaxMountOptionsLength)
	}
	s.MountOptions = cleanOptions(strings.Split(v, ","))
	return nil
}

func checkMountOptions(s Spec) error {
	_, err := ParseOptions(s.MountOptions)
	return err
}

// textSetting is a string; check (nil: any) applies to a value that is set.
func textSetting(key string, flag bool, usage string, p func(*Spec) *string, check func(string) error) setting {
	st := setting{key: key, attribute: true,
		parse:  func(s *Spec, v string) error { *p(s) = v; return nil },
		format: func(s Spec) string { return *p(&s) },
	}
	if flag {
		st.usage = usage
	}
	if check != nil {
		st.check = func(s Spec) error {
			if v := *p(&s); v != "" {
				if err := check(v); err != nil {
					return fmt.Errorf("%q: %w", v, err)
				}
			}
			return nil
		}
	}
	return st
}

// boolSetting reads strconv.ParseBool's forms and writes "true"/"false".
func boolSetting(key, usage string, p func(*Spec) *bool) setting {
	return setting{key: key, attribute: true, usage: usage, boolean: true,
		parse: func(s *Spec, v string) error {
			b, err := ParseBool(v)
			if err != nil {
				return err
			}
			*p(s) = b
			return nil
		},
		format: func(s Spec) string { return strconv.FormatBool(*p(&s)) },
	}
}

// sizeSetting is a Kubernetes quantity of bytes: at least lo, at most hi
// (none given: any), a multiple of unit.
func sizeSetting(key, usage string, p func(*Spec) *int64, lo, unit int64, hi ...int64) setting {
	top := int64(math.MaxInt64 - 1)
	if len(hi) > 0 {
		top = hi[0]
	}
	return setting{key: key, attribute: true, usage: usage,
		parse: func(s *Spec, v string) error {
			n, err := ParseSize(v)
			if err != nil {
				return err
			}
			*p(s) = n
			return nil
		},
		format: func(s Spec) string { return FormatSize(*p(&s)) },
		check: func(s Spec) error {
			if n := *p(&s); n < lo || n > top || n%unit != 0 {
				return fmt.Errorf("%s: want %s", FormatSize(n), sizeRange(lo, top, unit))
			}
			return nil
		},
	}
}

// sizeRange describes the accepted sizes for an error message.
func sizeRange(lo, hi, unit int64) string {
	s := fmt.Sprintf("at least %s", FormatSize(lo))
	if hi < math.MaxInt64-1 {
		s = fmt.Sprintf("from %s to %s", FormatSize(lo), FormatSize(hi))
	}
	if unit > 1 {
		s += fmt.Sprintf(", a multiple of %s", FormatSize(unit))
	}
	return s
}

// ttlSetting is a TTL: a non-negative Go duration, "0" or "-1".
func ttlSetting(key, usage string, p func(*Spec) *time.Duration) setting {
	return setting{key: key, attribute: true, usage: usage,
		parse: func(s *Spec, v string) error {
			d, err := ParseTTL(v)
			if err != nil {
				return err
			}
			*p(s) = d
			return nil
		},
		format: func(s Spec) string { return FormatTTL(*p(&s)) },
		check: func(s Spec) error {
			if d := *p(&s); d < Forever {
				return fmt.Errorf("%v: the only negative value is -1 (forever)", d)
			}
			return nil
		},
	}
}

// idSetting is a uid or gid. Its text is 0 to MaxID; the value -1
// (unset: the mount process's own) has no text and is left out.
func idSetting(key, usage string, p func(*Spec) *int64) setting {
	return setting{key: key, attribute: true, usage: usage,
		parse: func(s *Spec, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("%q: want an integer from 0 to %d", v, int64(MaxID))
			}
			*p(s) = n
			return nil
		},
		format: func(s Spec) string {
			if n := *p(&s); n != -1 {
				return strconv.FormatInt(n, 10)
			}
			return ""
		},
		check: func(s Spec) error {
			if n := *p(&s); n < -1 || n > MaxID {
				return fmt.Errorf("%d: want -1 (unset) or 0 to %d", n, int64(MaxID))
			}
			return nil
		},
	}
}

// modeSetting is octal permission bits up to 0777.
func modeSetting(key, usage string, p func(*Spec) *os.FileMode) setting {
	const want = "want octal permission bits up to 0777, such as 0644"
	return setting{key: key, attribute: true, usage: usage,
		parse: func(s *Spec, v string) error {
			n, err := strconv.ParseUint(v, 8, 32)
			if err != nil {
				return fmt.Errorf("%q: %s", v, want)
			}
			*p(s) = os.FileMode(n)
			return nil
		},
		format: func(s Spec) string { return fmt.Sprintf("%04o", uint32(*p(&s))) },
		check: func(s Spec) error {
			if m := *p(&s); m&^ModeBits != 0 {
				return fmt.Errorf("%04o: %s", uint32(m), want)
			}
			return nil
		},
	}
}

// checkSettings reports every setting of s out of its limits, skipping
// the keys in skip (those whose text did not parse).
func (s Spec) checkSettings(skip map[string]bool) []error {
	var errs []error
	for _, st := range settings() {
		if st.check == nil || skip[st.key] {
			continue
		}
		if err := st.check(s); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", st.key, err))
		}
	}
	return errs
}

// problems are the problems of a Spec or its attributes. The error wraps
// ErrInvalid and each problem without repeating ErrInvalid's text, so that
// a caller can put its own context in front.
type problems []error

func (p problems) Error() string        { return errors.Join(p...).Error() }
func (p problems) Unwrap() []error      { return p }
func (p problems) Is(target error) bool { return target == ErrInvalid }

// bufferSizeSetting is the memory of the block buffers: a size within
// [MinBufferSize, MaxBufferSize]; 0 only in a hand-off of an older
// release, which had no such setting (the default then).
func bufferSizeSetting() setting {
	st := sizeSetting(KeyBufferSize, "memory for the cache's block buffers: GETs in flight and blocks read ahead; half of it bounds the parts of a streamed upload (`quantity`; a cold sequential read needs about its rate times one GET's duration)",
		func(s *Spec) *int64 { return &s.BufferSize }, MinBufferSize, 1, MaxBufferSize)
	check, parse := st.check, st.parse
	st.check = func(s Spec) error {
		if s.BufferSize == 0 {
			return nil
		}
		return check(s)
	}
	st.parse = func(s *Spec, v string) error {
		t := *s
		if err := parse(&t, v); err != nil {
			return err
		}
		if t.BufferSize == 0 {
			return fmt.Errorf("0: want %s", sizeRange(MinBufferSize, MaxBufferSize, 1))
		}
		*s = t
		return nil
	}
	return st
}
