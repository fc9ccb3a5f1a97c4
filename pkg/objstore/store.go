package objstore

import (
	"context"
	"io"
	"time"
)

// ObjectInfo describes one object version.
type ObjectInfo struct {
	// Key is the full key inside the bucket.
	Key string
	// Size is the object's total length in bytes.
	Size int64
	// Version identifies the object's content: the S3/OSS ETag (quotes
	// stripped) or the GCS generation in decimal. Any overwrite changes it.
	Version string
	// ModTime is the object's last-modified time.
	ModTime time.Time
	// Metadata is the object's user metadata (S3 x-amz-meta-*, GCS
	// metadata), keys in lower case without the prefix, when the answer
	// carried it: Stat always (an empty map for none), List only on
	// backends whose listings hold it (nil: unknown). See metadata.go.
	Metadata map[string]string
}

// ReadOptions select what Read returns.
type ReadOptions struct {
	// Offset is the first byte returned. Offset == Size is valid and yields
	// an empty body; Offset > Size is ErrInvalidRange.
	Offset int64
	// Length is the number of bytes wanted; < 0 means "to the end". A range
	// that runs past the end is truncated, as HTTP does.
	Length int64
	// IfVersion, when set, makes Read fail with ErrPreconditionFailed unless
	// the object still has this Version, so callers never mix versions.
	IfVersion string
}

// ListOptions select one page of a listing.
type ListOptions struct {
	// Prefix restricts the listing to keys starting with it.
	Prefix string
	// Delimiter, usually "/", groups keys sharing the next path segment
	// into CommonPrefixes (implicit directories). Empty lists recursively.
	Delimiter string
	// ContinuationToken is the NextToken of the previous page.
	ContinuationToken string
	// MaxKeys caps the page size; 0 means the adapter's default (1000).
	MaxKeys int
}

// ListPage is one page of a listing, in lexicographic key order.
type ListPage struct {
	Objects []ObjectInfo
	// CommonPrefixes are full prefixes ending with the delimiter.
	CommonPrefixes []string
	// NextToken is empty on the last page.
	NextToken string
}

// PutOptions tune an upload.
type PutOptions struct {
	// Size is the body length when known, or -1. Adapters use it to choose
	// between a single PUT and a multipart / resumable upload.
	Size int64
	// ContentType is stored with the object when set.
	ContentType string
	// IfAbsent stores the object only if no object exists under the key,
	// atomically in the store: a create that loses fails with ErrExists
	// and stores nothing (conditional.go).
	IfAbsent bool
	// Metadata is stored as the object's user metadata (metadata.go).
	Metadata map[string]string
}

// Store is one bucket. Every method is safe for concurrent use, honours ctx
// and returns errors that wrap this package's sentinels where one applies.
type Store interface {
	// Stat returns the object's attributes, or ErrNotFound.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// Read streams a byte range of the object. The returned ObjectInfo
	// describes the whole object version the bytes come from. The caller
	// closes the reader. A stalled body fails instead of blocking forever.
	Read(ctx context.Context, key string, opts ReadOptions) (io.ReadCloser, ObjectInfo, error)
	// List returns one page of keys and common prefixes.
	List(ctx context.Context, opts ListOptions) (ListPage, error)
	// Put stores the body under key, replacing any previous version, and
	// returns the new version. Large bodies are uploaded in parts.
	Put(ctx context.Context, key string, body io.Reader, opts PutOptions) (ObjectInfo, error)
	// StartStream begins an upload of key whose content is read from src
	// while src is still being written (see Stream): large files go up
	// part by part as they are written. It never waits for the network;
	// ctx bounds the whole upload. Nothing replaces the previous object
	// until the stream's Complete returns.
	StartStream(ctx context.Context, key string, src io.ReaderAt, opts StreamOptions) (Stream, error)
	// Delete removes the object. Deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// Copy copies src to dst inside the bucket (server side where possible)
	// and returns dst's new version.
	Copy(ctx context.Context, src, dst string) (ObjectInfo, error)
	// DeletePrefix removes every object whose key starts with prefix and
	// returns how many were removed.
	DeletePrefix(ctx context.Context, prefix string) (int, error)
	// Close releases the adapter's resources.
	Close() error
}

// Admin manages buckets, for the CSI controller.
type Admin interface {
	BucketExists(ctx context.Context, bucket string) (bool, error)
	// CreateBucket creates the bucket; it is not an error if the caller
	// already owns it. A bucket owned by someone else is ErrBucketExists.
	CreateBucket(ctx context.Context, bucket string) error
	// DeleteBucket removes an empty bucket (ErrBucketNotEmpty otherwise);
	// a missing bucket is not an error.
	DeleteBucket(ctx context.Context, bucket string) error
	Close() error
}

// ListAll walks every page of a listing and calls fn for each page.
func ListAll(ctx context.Context, s Store, opts ListOptions, fn func(ListPage) error) error {
	for {
		page, err := s.List(ctx, opts)
		if err != nil {
			return err
		}
		if err := fn(page); err != nil {
			return err
		}
		if page.NextToken == "" {
			return nil
		}
		opts.ContinuationToken = page.NextToken
	}
}
