package s3store

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/basin-csi/basin/pkg/objstore"
)

var _ objstore.Uploads = (*Store)(nil)

// ListUploads implements objstore.Uploads with ListMultipartUploads, page
// by page (S3 orders them by key, then by initiation).
func (s *Store) ListUploads(ctx context.Context, prefix string) ([]objstore.Upload, error) {
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
			break
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
	return ups, nil
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
