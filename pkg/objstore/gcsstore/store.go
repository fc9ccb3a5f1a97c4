package gcsstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"cloud.google.com/go/storage"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Store is one GCS bucket. It is safe for concurrent use.
type Store struct {
	// constant
	cfg    objstore.Config
	client *storage.Client
	bucket *storage.BucketHandle
	// tokens switches the credentials (UpdateCredentials); nil unless
	// the store was opened with a credentials JSON.
	tokens *tokenSwitch
}

var _ objstore.Store = (*Store)(nil)

// New returns a Store for cfg.Bucket. It makes no request: a missing bucket
// shows up as ErrNotFound on first use.
func New(ctx context.Context, cfg objstore.Config, creds objstore.Credentials) (*Store, error) {
	cfg, err := checkConfig(cfg, true)
	if err != nil {
		return nil, err
	}
	client, tokens, _, err := newClient(ctx, cfg, creds)
	if err != nil {
		return nil, err
	}
	return &Store{cfg: cfg, client: client, bucket: client.Bucket(cfg.Bucket), tokens: tokens}, nil
}

// Close releases the client.
func (s *Store) Close() error { return s.client.Close() }

// requestCtx bounds a call that streams no body with cfg.RequestTimeout.
// The bound covers the SDK's retries of that call too.
func (s *Store) requestCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.RequestTimeout)
}

// Stat returns the object's attributes.
func (s *Store) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return objstore.ObjectInfo{}, err
	}
	ctx, cancel := s.requestCtx(ctx)
	defer cancel()
	attrs, err := s.bucket.Object(key).Attrs(ctx)
	if err != nil {
		return objstore.ObjectInfo{}, mapErr(opStat, key, err)
	}
	return infoFromAttrs(attrs), nil
}

// Delete removes the object; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	ctx, cancel := s.requestCtx(ctx)
	defer cancel()
	err := mapErr(opDelete, key, s.bucket.Object(key).Delete(ctx))
	if errors.Is(err, objstore.ErrNotFound) {
		return nil
	}
	return err
}

// Copy copies src to dst server-side (a rewrite, which inside one bucket is
// a metadata-only operation, so RequestTimeout bounds it).
func (s *Store) Copy(ctx context.Context, src, dst string) (objstore.ObjectInfo, error) {
	if err := checkKey(src); err != nil {
		return objstore.ObjectInfo{}, err
	}
	if err := checkKey(dst); err != nil {
		return objstore.ObjectInfo{}, err
	}
	ctx, cancel := s.requestCtx(ctx)
	defer cancel()
	attrs, err := s.bucket.Object(dst).CopierFrom(s.bucket.Object(src)).Run(ctx)
	if err != nil {
		return objstore.ObjectInfo{}, mapErr(opCopy, src+" -> "+dst, err)
	}
	return infoFromAttrs(attrs), nil
}

// infoFromAttrs converts SDK attributes; Version is the generation.
func infoFromAttrs(a *storage.ObjectAttrs) objstore.ObjectInfo {
	return objstore.ObjectInfo{
		Key:      a.Name,
		Size:     a.Size,
		Version:  formatGeneration(a.Generation),
		ModTime:  modTime(a.Updated),
		Metadata: objstore.NormalizeMetadata(a.Metadata),
	}
}

// modTime truncates to whole seconds: reads learn the time from the
// Last-Modified header, which has no more, and Stat, List and Read must
// agree.
func modTime(t time.Time) time.Time { return t.Truncate(time.Second) }

func formatGeneration(g int64) string { return strconv.FormatInt(g, 10) }

// parseGeneration reads a Version back. Anything that is not a positive
// decimal cannot be a generation, so it can never match.
func parseGeneration(v string) (int64, error) {
	g, err := strconv.ParseInt(v, 10, 64)
	if err != nil || g <= 0 {
		return 0, fmt.Errorf("%w: version %q is not a GCS generation", objstore.ErrPreconditionFailed, v)
	}
	return g, nil
}

// hasDotSegment reports whether a '/'-separated segment of key is "." or "..".
func hasDotSegment(key string) bool {
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// maxKeyLen is GCS's limit on object names, in bytes of UTF-8.
const maxKeyLen = 1024

// checkKey enforces GCS object naming rules that the service would reject
// anyway, so the caller gets ErrInvalidKey instead of a 400.
func checkKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", objstore.ErrInvalidKey)
	case len(key) > maxKeyLen:
		return fmt.Errorf("%w: key longer than %d bytes", objstore.ErrInvalidKey, maxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: key %q is not valid UTF-8", objstore.ErrInvalidKey, key)
	case strings.ContainsAny(key, "\r\n"):
		return fmt.Errorf("%w: key %q contains a carriage return or line feed", objstore.ErrInvalidKey, key)
	case hasDotSegment(key):
		// GCS stores such names, but no path in a POSIX tree maps to
		// them, and fake-gcs-server's filesystem backend cleans them into
		// other keys. Refused everywhere, so every backend agrees.
		return fmt.Errorf("%w: key %q has a \".\" or \"..\" segment", objstore.ErrInvalidKey, key)
	case strings.HasPrefix(key, ".well-known/acme-challenge/"):
		return fmt.Errorf("%w: key %q is reserved by GCS", objstore.ErrInvalidKey, key)
	}
	return nil
}
