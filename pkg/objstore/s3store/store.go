package s3store

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/basin-csi/basin/pkg/objstore"
)

// S3 limits the adapter works within.
const (
	// maxKeyLen is S3's limit on a key's length in bytes.
	maxKeyLen = 1024
	// maxDeleteBatch is the most keys one DeleteObjects call takes.
	maxDeleteBatch = 1000
	// maxParts is the most parts one multipart upload may have.
	maxParts = 10000
	// copyPartSize is the part size of a multipart copy, and the largest
	// source copied with one CopyObject (S3 allows 5 GiB). Small enough
	// that every copy request answers within RequestTimeout even on a slow
	// server (256 MiB in 30 s is 9 MB/s), and parallel parts are faster.
	copyPartSize = 256 << 20
)

// Store is one S3 or OSS bucket. It implements objstore.Store.
type Store struct {
	// constant
	c      *client
	bucket string
	// fast sends the read path's GETs (fastget.go); nil: the SDK's
	// GetObject.
	fast *fastGet
	// deleteBatch, copyThreshold and copyPart are the limits above; tests
	// lower them to exercise batching and multipart copy cheaply.
	deleteBatch   int
	copyThreshold int64
	copyPart      int64
}

var _ objstore.Store = (*Store)(nil)

// New returns a Store for cfg.Bucket. cfg.Backend must be s3 or oss.
// Empty credentials select the SDK's default credential chain.
func New(ctx context.Context, cfg objstore.Config, creds objstore.Credentials) (*Store, error) {
	return newStore(ctx, cfg, creds, isAWS)
}

// newStore is New with the choice of flexible checksums made by awsMode
// (tests run Amazon's settings against MinIO).
func newStore(ctx context.Context, cfg objstore.Config, creds objstore.Credentials, awsMode func(objstore.Config) bool) (*Store, error) {
	cfg, err := resolveConfig(cfg, creds, true)
	if err != nil {
		return nil, err
	}
	c, err := newClient(ctx, cfg, creds, awsMode(cfg))
	if err != nil {
		return nil, err
	}
	return &Store{
		c:             c,
		bucket:        cfg.Bucket,
		fast:          newFastGet(ctx, c.s3.Options(), cfg.Bucket),
		deleteBatch:   maxDeleteBatch,
		copyThreshold: copyPartSize,
		copyPart:      copyPartSize,
	}, nil
}

// String names the store without its credentials.
func (s *Store) String() string {
	return fmt.Sprintf("s3store.Store{backend=%s endpoint=%q bucket=%q}", s.c.cfg.Backend, s.c.cfg.Endpoint, s.bucket)
}

// Close releases pooled connections. Calls in flight are not interrupted.
func (s *Store) Close() error {
	s.c.close()
	return nil
}

// checkKey refuses keys S3 cannot store.
func checkKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", objstore.ErrInvalidKey)
	case len(key) > maxKeyLen:
		return fmt.Errorf("%w: key is %d bytes, more than %d", objstore.ErrInvalidKey, len(key), maxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: key %q is not valid UTF-8", objstore.ErrInvalidKey, key)
	}
	return nil
}

// version turns an ETag into an objstore version.
func version(etag *string) string {
	return strings.Trim(aws.ToString(etag), `"`)
}

// quoted turns an objstore version back into an ETag for If-Match.
func quoted(version string) string {
	return `"` + version + `"`
}

// info builds an ObjectInfo from the fields S3 returns.
func info(key string, size *int64, etag *string, lastModified *time.Time) objstore.ObjectInfo {
	return objstore.ObjectInfo{
		Key:     key,
		Size:    aws.ToInt64(size),
		Version: version(etag),
		ModTime: modTime(lastModified),
	}
}

// modTime normalises a store time to UTC whole seconds, the precision of
// HTTP's Last-Modified, so Stat, List, Put and Copy agree on it.
func modTime(t *time.Time) time.Time {
	return aws.ToTime(t).UTC().Truncate(time.Second)
}
