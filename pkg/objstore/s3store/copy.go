package s3store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/basin-csi/basin/pkg/objstore"
)

// copyTries bounds how often Copy starts over when the source changes
// between its HEAD and the copy.
const copyTries = 3

// Copy copies src to dst on the server: one CopyObject up to copyPartSize,
// a multipart copy (UploadPartCopy) above. The copy is pinned to the source
// version seen by a HEAD, so the returned size always matches the bytes.
func (s *Store) Copy(ctx context.Context, src, dst string) (objstore.ObjectInfo, error) {
	if err := checkKey(src); err != nil {
		return objstore.ObjectInfo{}, err
	}
	if err := checkKey(dst); err != nil {
		return objstore.ObjectInfo{}, err
	}
	for try := 1; ; try++ {
		srcHead, err := s.headObject(ctx, src, "")
		if err != nil {
			return objstore.ObjectInfo{}, err
		}
		srcInfo := info(src, srcHead.ContentLength, srcHead.ETag, srcHead.LastModified)
		var oi objstore.ObjectInfo
		switch {
		case src == dst:
			// S3 refuses to copy an object onto itself unchanged.
			oi = srcInfo
		case srcInfo.Size > s.copyThreshold:
			oi, err = s.copyMultipart(ctx, src, dst, srcHead)
		default:
			oi, err = s.copyObject(ctx, src, dst, srcInfo)
		}
		if errors.Is(err, objstore.ErrPreconditionFailed) && try < copyTries {
			continue // src was overwritten meanwhile: copy the new one
		}
		return oi, err
	}
}

// copyObject is one CopyObject of the source version in srcInfo.
func (s *Store) copyObject(ctx context.Context, src, dst string, srcInfo objstore.ObjectInfo) (objstore.ObjectInfo, error) {
	out, err := s.c.s3.CopyObject(ctx, &s3.CopyObjectInput{
		Bucket:            aws.String(s.bucket),
		Key:               aws.String(dst),
		CopySource:        aws.String(copySource(s.bucket, src)),
		CopySourceIfMatch: aws.String(quoted(srcInfo.Version)),
	})
	if err != nil {
		return objstore.ObjectInfo{}, mapErr(ctx, fmt.Sprintf("CopyObject %q to", src), s.bucket, dst, err)
	}
	oi := objstore.ObjectInfo{Key: dst, Size: srcInfo.Size}
	if r := out.CopyObjectResult; r != nil {
		oi.Version = version(r.ETag)
		oi.ModTime = modTime(r.LastModified)
	}
	return oi, nil
}

// copyMultipart copies a source above copyThreshold in parts of copyPart
// bytes (more if 10,000 parts would not hold it), UploadConcurrency at once.
// Content type and user metadata are carried over as CopyObject would.
func (s *Store) copyMultipart(ctx context.Context, src, dst string, srcHead *s3.HeadObjectOutput) (objstore.ObjectInfo, error) {
	op := fmt.Sprintf("multipart copy %q to", src)
	size := aws.ToInt64(srcHead.ContentLength)
	ifMatch := aws.String(quoted(version(srcHead.ETag)))
	create, err := s.c.s3.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket:             aws.String(s.bucket),
		Key:                aws.String(dst),
		ContentType:        srcHead.ContentType,
		ContentEncoding:    srcHead.ContentEncoding,
		ContentDisposition: srcHead.ContentDisposition,
		CacheControl:       srcHead.CacheControl,
		Metadata:           srcHead.Metadata,
	})
	if err != nil {
		return objstore.ObjectInfo{}, mapErr(ctx, op, s.bucket, dst, err)
	}
	uploadID := create.UploadId

	partSize := max(s.copyPart, (size+maxParts-1)/maxParts)
	parts := make([]types.CompletedPart, (size+partSize-1)/partSize)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	sem := make(chan struct{}, s.c.cfg.UploadConcurrency)
	for i := range parts {
		first := int64(i) * partSize
		last := min(first+partSize, size) - 1
		sem <- struct{}{}
		if pctx.Err() != nil {
			<-sem
			break // a part failed, or the caller gave up
		}
		wg.Go(func() {
			defer func() { <-sem }()
			out, err := s.c.s3.UploadPartCopy(pctx, &s3.UploadPartCopyInput{
				Bucket:            aws.String(s.bucket),
				Key:               aws.String(dst),
				UploadId:          uploadID,
				PartNumber:        aws.Int32(int32(i + 1)),
				CopySource:        aws.String(copySource(s.bucket, src)),
				CopySourceIfMatch: ifMatch,
				CopySourceRange:   aws.String(fmt.Sprintf("bytes=%d-%d", first, last)),
			})
			if err == nil && out.CopyPartResult == nil {
				err = fmt.Errorf("%w: UploadPartCopy answered without a result", objstore.ErrUnavailable)
			}
			if err != nil {
				errOnce.Do(func() { firstErr = err; cancel() })
				return
			}
			parts[i] = types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.CopyPartResult.ETag}
		})
	}
	wg.Wait()
	if firstErr == nil && pctx.Err() != nil {
		firstErr = pctx.Err()
	}
	if firstErr == nil {
		var done *s3.CompleteMultipartUploadOutput
		done, firstErr = s.c.s3.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
			Bucket:          aws.String(s.bucket),
			Key:             aws.String(dst),
			UploadId:        uploadID,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		})
		if firstErr == nil {
			oi, err := s.head(ctx, dst, version(done.ETag))
			if err != nil {
				// Stored; attributes unknown (see putMultipart).
				oi = objstore.ObjectInfo{Key: dst, Size: size, Version: version(done.ETag), ModTime: now()}
			}
			return oi, nil
		}
	}
	s.abort(ctx, dst, uploadID)
	return objstore.ObjectInfo{}, mapErr(ctx, op, s.bucket, dst, firstErr)
}

// abort drops a failed multipart upload's parts, even when ctx is done.
func (s *Store) abort(ctx context.Context, key string, uploadID *string) {
	actx, cancel := s.c.withTimeout(context.WithoutCancel(ctx))
	defer cancel()
	// Best effort: a bucket lifecycle rule reaps what this misses.
	_, _ = s.c.s3.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{
		Bucket: aws.String(s.bucket), Key: aws.String(key), UploadId: uploadID,
	})
}

// copySource is the x-amz-copy-source value "bucket/key", percent-encoded
// except for RFC 3986 unreserved characters and '/'. Encoding '+' matters:
// some stores (MinIO) decode the header as a query string.
func copySource(bucket, key string) string {
	const hex = "0123456789ABCDEF"
	s := bucket + "/" + key
	var b strings.Builder
	b.Grow(len(s) * 3)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == '~' || c == '/' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
