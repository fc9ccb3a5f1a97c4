package s3store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/basin-csi/basin/pkg/objstore"
)

var _ objstore.MetadataSetter = (*Store)(nil)

// SetMetadata copies the object onto itself with meta as its user metadata
// (MetadataDirective REPLACE), pinned to the version a HEAD saw (or
// ifVersion). Nothing leaves the server, but the server copies the bytes:
// one CopyObject up to copyThreshold (256 MiB; S3 allows 5 GiB), whose
// ETag stays the content's MD5, and above it a multipart copy of
// copyPart-sized UploadPartCopy parts, UploadConcurrency at once, whose
// ETag changes. Content type and the other headers are kept.
func (s *Store) SetMetadata(ctx context.Context, key string, meta map[string]string, ifVersion string) (objstore.ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return objstore.ObjectInfo{}, err
	}
	head, err := s.headObject(ctx, key, ifVersion)
	if err != nil {
		return objstore.ObjectInfo{}, err
	}
	cur := info(key, head.ContentLength, head.ETag, head.LastModified)
	if cur.Size > s.copyThreshold {
		replaced := *head
		replaced.Metadata = meta
		oi, err := s.copyMultipart(ctx, key, key, &replaced)
		if err != nil {
			return objstore.ObjectInfo{}, err
		}
		oi.Metadata = objstore.NormalizeMetadata(meta)
		return oi, nil
	}
	cctx, cancel := s.c.withTimeout(ctx)
	defer cancel()
	out, err := s.c.s3.CopyObject(cctx, &s3.CopyObjectInput{
		Bucket:             aws.String(s.bucket),
		Key:                aws.String(key),
		CopySource:         aws.String(copySource(s.bucket, key)),
		CopySourceIfMatch:  aws.String(quoted(cur.Version)),
		MetadataDirective:  types.MetadataDirectiveReplace,
		Metadata:           meta,
		ContentType:        head.ContentType,
		ContentEncoding:    head.ContentEncoding,
		ContentDisposition: head.ContentDisposition,
		CacheControl:       head.CacheControl,
	})
	if err != nil {
		return objstore.ObjectInfo{}, mapErr(ctx, fmt.Sprintf("CopyObject %q metadata of", key), s.bucket, key, err)
	}
	oi := objstore.ObjectInfo{Key: key, Size: cur.Size, Version: cur.Version, ModTime: cur.ModTime, Metadata: objstore.NormalizeMetadata(meta)}
	if r := out.CopyObjectResult; r != nil {
		oi.Version = version(r.ETag)
		oi.ModTime = modTime(r.LastModified)
	}
	return oi, nil
}
