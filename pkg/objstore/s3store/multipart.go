package s3store

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/basin-csi/basin/pkg/objstore"
)

var _ objstore.Uploads = (*Store)(nil)

// ListUploads implements objstore.Uploads with ListMultipartUploads, page
// by page (S3 orders them by key, then by initiation).
//
// MinIO answers a prefix that is not a whole key, nor empty, with no
// uploads at all (it lists the uploads of one object, or of the bucket).
// So when a prefix lists nothing, the whole bucket is listed and filtered
// here; a store that refuses that (credentials limited to the prefix)
// has answered the prefix already.
func (s *Store) ListUploads(ctx context.Context, prefix string) ([]objstore.Upload, error) {
	ups, err := s.listUploads(ctx, prefix)
	if err != nil || len(ups) > 0 || prefix == "" {
		return ups, err
	}
	all, err := s.listUploads(ctx, "")
	if err != nil {
		return nil, nil
	}
	for _, u := range all {
		if strings.HasPrefix(u.Key, prefix) {
			ups = append(ups, u)
		}
	}
	return ups, nil
}

// listUploads is one ListMultipartUploads listing of prefix.
func (s *Store) listUploads(ctx context.Context, prefix string) ([]objstore.Upload, error) {
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String(s.bucket), Prefix: aws.String(prefix)}
	var ups []objstore.Upload
	for {
		cctx, cancel := s.c.withTimeout(ctx)
		out, err := s.c.s3.ListMultipartUploads(cctx, in)
		cancel()
		if err != nil {
			return nil, mapErr(ctx, "ListMultipartUploads", s.bucket, prefix, err)
		}
		for _, u := range out.Uploads {
			ups = append(ups, objstore.Upload{Key: aws.ToString(u.Key), ID: aws.ToString(u.UploadId), Initiated: aws.ToTime(u.Initiated)})
		}
		if !aws.ToBool(out.IsTruncated) {
			return ups, nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// AbortUpload implements objstore.Uploads with AbortMultipartUpload; an
// upload the store no longer knows (NoSuchUpload) is already gone.
func (s *Store) AbortUpload(ctx context.Context, u objstore.Upload) error {
	cctx, cancel := s.c.withTimeout(ctx)
	defer cancel()
	_, err := s.c.s3.AbortMultipartUpload(cctx, &s3.AbortMultipartUploadInput{
		Bucket: aws.String(s.bucket), Key: aws.String(u.Key), UploadId: aws.String(u.ID),
	})
	if err == nil || isNoSuchUpload(err) {
		return nil
	}
	return mapErr(ctx, "AbortMultipartUpload", s.bucket, u.Key, err)
}

// isNoSuchUpload reports whether err says the upload id is unknown.
func isNoSuchUpload(err error) bool {
	var nsu interface{ ErrorCode() string }
	return errors.As(err, &nsu) && nsu.ErrorCode() == "NoSuchUpload"
}
