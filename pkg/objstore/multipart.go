package objstore

import (
	"context"
	"strings"
	"time"
)

// Incomplete uploads. An S3 or OSS multipart upload that is never
// completed nor aborted — its process was killed mid-upload — keeps its
// parts in the bucket, invisible and billed, until a lifecycle rule or an
// abort removes them. Stores with such uploads implement Uploads, so Basin
// can abort the ones it left behind. Other stores need nothing:
//
//   - GCS: gcsstore uploads large bodies as resumable uploads; an
//     unfinished session is not an object and expires by itself (GCS
//     keeps a session for a week); nothing of it is stored as data.
//   - filestore: an upload is a temporary file beside its key; a killed
//     process leaves at most that file, which List never shows.

// AbandonedAge is how old an incomplete upload must be before a sweep
// that cannot tell whose it is aborts it. Basin's own uploads last at
// most as long as the file they stream is written plus the close's
// transfer bound; a live writer whose stream is aborted anyway uploads
// its file again at close, so the bound costs a re-upload at worst, never
// data.
const AbandonedAge = 24 * time.Hour

// Upload is an incomplete multipart upload.
type Upload struct {
	// Key is the object key the upload would create.
	Key string
	// ID is the store's upload id.
	ID string
	// Initiated is when the store began the upload.
	Initiated time.Time
}

// Uploads is implemented by stores whose incomplete uploads stay in the
// bucket until aborted: s3store (S3, S3-compatible stores, OSS). Reach it
// through views with UploadsOf.
type Uploads interface {
	// ListUploads returns every incomplete upload whose key starts with
	// prefix.
	ListUploads(ctx context.Context, prefix string) ([]Upload, error)
	// AbortUpload discards u's parts. An upload already gone (completed
	// or aborted) is not an error.
	AbortUpload(ctx context.Context, u Upload) error
}

// Wrapper is implemented by Stores that wrap another one (instrumentation,
// fault injection) without changing what it holds, so UploadsOf reaches
// the adapter through them.
type Wrapper interface {
	Unwrap() Store
}

// UploadsOf returns the Uploads of s, through WithPrefix views (keys
// relative to the view) and Wrappers, or false when s's store has none.
func UploadsOf(s Store) (Uploads, bool) {
	return reach(s, func(u Uploads, prefix string) Uploads { return prefixUploads{u: u, prefix: prefix} })
}

// reach returns the optional interface T of the store under s, through
// Wrappers and WithPrefix views (view adapts it to a view's prefix), or
// false when that store does not implement T.
func reach[T any](s Store, view func(T, string) T) (T, bool) {
	switch v := s.(type) {
	case Wrapper:
		return reach(v.Unwrap(), view)
	case *prefixStore:
		t, ok := reach(v.s, view)
		if !ok {
			return t, false
		}
		return view(t, v.prefix), true
	case T:
		return v, true
	}
	var zero T
	return zero, false
}

// prefixUploads is the Uploads of a WithPrefix view.
type prefixUploads struct {
	// constant
	u      Uploads
	prefix string
}

func (p prefixUploads) ListUploads(ctx context.Context, prefix string) ([]Upload, error) {
	ups, err := p.u.ListUploads(ctx, p.prefix+prefix)
	for i := range ups {
		ups[i].Key = strings.TrimPrefix(ups[i].Key, p.prefix)
	}
	return ups, err
}

func (p prefixUploads) AbortUpload(ctx context.Context, u Upload) error {
	u.Key = p.prefix + u.Key
	return p.u.AbortUpload(ctx, u)
}

// AbortUploads aborts the incomplete uploads under prefix for which
// abandoned returns true, and returns how many it aborted. It stops at
// the first error.
func AbortUploads(ctx context.Context, u Uploads, prefix string, abandoned func(Upload) bool) (int, error) {
	ups, err := u.ListUploads(ctx, prefix)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, up := range ups {
		if !abandoned(up) {
			continue
		}
		if err := u.AbortUpload(ctx, up); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
