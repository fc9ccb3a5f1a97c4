package fuse

import (
	"math"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Modes, owners, times and symbolic links live in the objects' user
// metadata, under the keys the common tools use, so that a file chmod'ed,
// touched or linked through Basin looks the same through s3fs, rclone and
// gcsfuse, and theirs look right through Basin:
//
//	mode           s3fs: st_mode in decimal, file type included
//	               (33261 = S_IFREG|0755, 41471 = S_IFLNK|0777)
//	uid, gid       s3fs: decimal
//	mtime          s3fs and rclone on S3: seconds since the epoch, with
//	               an optional fraction ("1577836800.5"); rclone on GCS
//	               writes RFC 3339, which is read too
//	gcsfuse_mtime  gcsfuse: RFC 3339 with nanoseconds, UTC
//	gcsfuse_symlink_target
//	               gcsfuse: the object is a symbolic link to this target
//	goog-reserved-file-mtime
//	               gsutil (read only): seconds since the epoch
//
// A symbolic link written here is an object whose body is its target,
// with mode S_IFLNK|0777 and gcsfuse_symlink_target: s3fs reads the body,
// gcsfuse the key.
const (
	metaMode          = "mode"
	metaUID           = "uid"
	metaGID           = "gid"
	metaMtime         = "mtime"
	metaGcsfuseMtime  = "gcsfuse_mtime"
	metaGcsfuseTarget = "gcsfuse_symlink_target"
	metaGsutilMtime   = "goog-reserved-file-mtime"
)

// symlinkMax bounds the objects whose metadata lookups and listings ask
// for when the listing did not carry it (S3): a link's body is its target,
// at most PATH_MAX bytes, so larger objects are never links (s3fs,
// gcsfuse) and keep the volume's mode unless a HEAD or this mount's own
// write told their metadata. See docs/architecture.md for the cost.
const symlinkMax = 4096

// posixAttrs are the attributes an object's metadata records; zero
// values mean "not recorded".
type posixAttrs struct {
	mode     uint32 // st_mode, type bits included; 0: none
	uid, gid uint32
	hasUID   bool
	hasGID   bool
	mtime    time.Time
	target   string // symbolic link target from metadata (gcsfuse)
}

// parsePosix reads the attributes of an object's metadata (nil: none).
func parsePosix(meta map[string]string) posixAttrs {
	var a posixAttrs
	if v, err := strconv.ParseUint(strings.TrimSpace(meta[metaMode]), 10, 32); err == nil {
		a.mode = uint32(v)
		if a.mode&syscall.S_IFMT == 0 {
			a.mode |= syscall.S_IFREG
		}
	}
	if v, err := strconv.ParseUint(strings.TrimSpace(meta[metaUID]), 10, 32); err == nil {
		a.uid, a.hasUID = uint32(v), true
	}
	if v, err := strconv.ParseUint(strings.TrimSpace(meta[metaGID]), 10, 32); err == nil {
		a.gid, a.hasGID = uint32(v), true
	}
	for _, k := range []string{metaGcsfuseMtime, metaMtime, metaGsutilMtime} {
		if t, ok := parseMtime(meta[k]); ok {
			a.mtime = t
			break
		}
	}
	if t := meta[metaGcsfuseTarget]; t != "" {
		a.target = t
		a.mode = syscall.S_IFLNK | 0o777
	}
	return a
}

// isLink reports whether the metadata makes the object a symbolic link.
func (a posixAttrs) isLink() bool { return a.mode&syscall.S_IFMT == syscall.S_IFLNK }

// parseMtime reads seconds since the epoch (with an optional fraction) or
// RFC 3339.
func parseMtime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, false
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, true
	}
	secStr, fracStr, _ := strings.Cut(s, ".")
	sec, err := strconv.ParseInt(secStr, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	var nsec int64
	if fracStr != "" {
		if len(fracStr) > 9 {
			fracStr = fracStr[:9]
		}
		f, err := strconv.ParseInt(fracStr, 10, 64)
		if err != nil || f < 0 {
			return time.Time{}, false
		}
		nsec = f * int64(math.Pow10(9-len(fracStr)))
	}
	return time.Unix(sec, nsec), true
}

// formatMtime writes seconds since the epoch with nanoseconds when there
// are any, as rclone does ("1577836800" or "1577836800.500000000").
func formatMtime(t time.Time) string {
	s := strconv.FormatInt(t.Unix(), 10)
	if ns := t.Nanosecond(); ns != 0 {
		s += "." + strconv.FormatInt(int64(ns)+1e9, 10)[1:]
	}
	return s
}

// withMode returns meta (copied) recording mode.
func withMode(meta map[string]string, mode uint32) map[string]string {
	out := cloneMeta(meta)
	out[metaMode] = strconv.FormatUint(uint64(mode), 10)
	return out
}

// withOwner returns meta (copied) recording the owner ids that are set.
func withOwner(meta map[string]string, uid, gid *uint32) map[string]string {
	out := cloneMeta(meta)
	if uid != nil {
		out[metaUID] = strconv.FormatUint(uint64(*uid), 10)
	}
	if gid != nil {
		out[metaGID] = strconv.FormatUint(uint64(*gid), 10)
	}
	return out
}

// withMtime returns meta (copied) recording t under every convention's key.
func withMtime(meta map[string]string, t time.Time) map[string]string {
	out := cloneMeta(meta)
	out[metaMtime] = formatMtime(t)
	out[metaGcsfuseMtime] = t.UTC().Format(time.RFC3339Nano)
	delete(out, metaGsutilMtime)
	return out
}

// hasMtime reports whether meta records a modification time.
func hasMtime(meta map[string]string) bool {
	_, ok := parseMtime(meta[metaMtime])
	_, ok2 := parseMtime(meta[metaGcsfuseMtime])
	return ok || ok2
}

// linkMeta is the metadata of a symbolic link to target.
func linkMeta(target string, mtime time.Time) map[string]string {
	m := withMtime(nil, mtime)
	m[metaMode] = strconv.FormatUint(uint64(syscall.S_IFLNK|0o777), 10)
	m[metaGcsfuseTarget] = target
	return m
}

func cloneMeta(meta map[string]string) map[string]string {
	out := make(map[string]string, len(meta)+2)
	for k, v := range meta {
		out[k] = v
	}
	return out
}
