package main

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/basin-csi/basin/pkg/objstore"
)

// source is a parsed SOURCE argument of `csi-driver mount`.
type source struct {
	Backend objstore.Backend
	// Bucket is the bucket name, or the absolute directory for file://.
	Bucket string
	// Prefix is the key prefix the volume is rooted at ("" or ending "/").
	Prefix string
}

// schemes maps URL schemes to backends.
var schemes = map[string]objstore.Backend{
	"s3":   objstore.BackendS3,
	"oss":  objstore.BackendOSS,
	"gs":   objstore.BackendGCS,
	"file": objstore.BackendFile,
}

// parseSource parses s3://bucket[/prefix], oss://bucket[/prefix],
// gs://bucket[/prefix] and file:///abs/dir.
func parseSource(s string) (source, error) {
	u, err := url.Parse(s)
	if err != nil {
		return source{}, fmt.Errorf("source %q: %w", s, err)
	}
	b, ok := schemes[u.Scheme]
	if !ok {
		return source{}, fmt.Errorf("source %q: scheme must be s3://, oss://, gs:// or file://", s)
	}
	if u.User != nil {
		return source{}, fmt.Errorf("source: credentials do not belong in the URL; use the environment or credential files")
	}
	if u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return source{}, fmt.Errorf("source %q: query, fragment or opaque parts are not allowed", s)
	}
	if b == objstore.BackendFile {
		if u.Host != "" {
			return source{}, fmt.Errorf("source %q: file URLs have no host; write file:///abs/dir", s)
		}
		if !path.IsAbs(u.Path) {
			return source{}, fmt.Errorf("source %q: file URLs need an absolute path", s)
		}
		return source{Backend: b, Bucket: path.Clean(u.Path)}, nil
	}
	if u.Host == "" {
		return source{}, fmt.Errorf("source %q: no bucket name", s)
	}
	prefix := strings.TrimLeft(u.Path, "/")
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if strings.Contains(prefix, "//") {
		return source{}, fmt.Errorf("source %q: empty path segment in the prefix", s)
	}
	return source{Backend: b, Bucket: u.Host, Prefix: prefix}, nil
}

// String is the canonical URL (it never holds secrets).
func (s source) String() string {
	if s.Backend == objstore.BackendFile {
		return "file://" + s.Bucket
	}
	scheme := string(s.Backend)
	if s.Backend == objstore.BackendGCS {
		scheme = "gs"
	}
	return scheme + "://" + s.Bucket + "/" + s.Prefix
}
