package s3store

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/basin-csi/basin/pkg/objstore"
)

// StartStream implements objstore.Store with the SDK's multipart calls:
// CreateMultipartUpload in the background, one UploadPart per part whose
// body is a section of src (the SDK signs and retries it by seeking, so no
// part is buffered in memory), CompleteMultipartUpload at Complete and
// AbortMultipartUpload on Abort. An upload never completed stays invisible;
// a process killed mid-stream leaves it to the bucket's lifecycle rule for
// incomplete multipart uploads.
func (s *Store) StartStream(ctx context.Context, key string, src io.ReaderAt, opts objstore.StreamOptions) (objstore.Stream, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	partSize, conc := opts.Or(s.c.cfg.PartSize, s.c.cfg.UploadConcurrency)
	sink := &s3Sink{s: s, key: key, contentType: opts.ContentType, metadata: opts.Metadata}
	if s.c.checksum != aws.RequestChecksumCalculationWhenRequired {
		// As the SDK's uploader does: parts carry a CRC32 that
		// CompleteMultipartUpload lists again.
		sink.checksum = types.ChecksumAlgorithmCrc32
	}
	return objstore.NewPartStream(ctx, src, sink, max(partSize, manager.MinUploadPartSize), conc), nil
}

// s3Sink is one multipart upload.
type s3Sink struct {
	// constant
	s           *Store
	key         string
	contentType string
	metadata    map[string]string
	checksum    types.ChecksumAlgorithm

	uploadID *string // set by Begin, before any part

	mu    sync.Mutex
	parts []types.CompletedPart // guarded by mu
}

func (k *s3Sink) Begin(ctx context.Context) error {
	in := &s3.CreateMultipartUploadInput{Bucket: aws.String(k.s.bucket), Key: aws.String(k.key), ChecksumAlgorithm: k.checksum, Metadata: k.metadata}
	if k.contentType != "" {
		in.ContentType = aws.String(k.contentType)
	}
	cctx, cancel := k.s.c.withTimeout(ctx)
	defer cancel()
	out, err := k.s.c.s3.CreateMultipartUpload(cctx, in)
	if err != nil {
		return mapErr(ctx, "CreateMultipartUpload", k.s.bucket, k.key, err)
	}
	k.uploadID = out.UploadId
	return nil
}

func (k *s3Sink) Part(ctx context.Context, n int, _ int64, body *io.SectionReader) error {
	if n > maxParts {
		return fmt.Errorf("%w: s3store: stream %s/%q: more than %d parts", objstore.ErrInvalidRange, k.s.bucket, k.key, maxParts)
	}
	out, err := k.s.c.s3.UploadPart(ctx, &s3.UploadPartInput{
		Bucket:            aws.String(k.s.bucket),
		Key:               aws.String(k.key),
		UploadId:          k.uploadID,
		PartNumber:        aws.Int32(int32(n)),
		Body:              body,
		ContentLength:     aws.Int64(body.Size()),
		ChecksumAlgorithm: k.checksum,
	})
	if err != nil {
		return mapErr(ctx, fmt.Sprintf("UploadPart %d", n), k.s.bucket, k.key, err)
	}
	k.mu.Lock()
	k.parts = append(k.parts, types.CompletedPart{
		PartNumber: aws.Int32(int32(n)), ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32,
	})
	k.mu.Unlock()
	return nil
}

func (k *s3Sink) Commit(ctx context.Context, parts int) (objstore.ObjectInfo, error) {
	k.mu.Lock()
	done := slices.Clone(k.parts)
	k.mu.Unlock()
	if len(done) != parts {
		return objstore.ObjectInfo{}, fmt.Errorf("s3store: stream %s/%q: %d of %d parts uploaded", k.s.bucket, k.key, len(done), parts)
	}
	slices.SortFunc(done, func(a, b types.CompletedPart) int { return int(*a.PartNumber - *b.PartNumber) })
	out, err := k.s.c.s3.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket:          aws.String(k.s.bucket),
		Key:             aws.String(k.key),
		UploadId:        k.uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done},
	})
	if err != nil {
		return objstore.ObjectInfo{}, mapErr(ctx, "CompleteMultipartUpload", k.s.bucket, k.key, err)
	}
	oi, err := k.s.head(ctx, k.key, version(out.ETag))
	if err != nil {
		// Stored; only its attributes are unknown (see putMultipart).
		return objstore.ObjectInfo{Key: k.key, Version: version(out.ETag), ModTime: now()}, nil
	}
	return oi, nil
}

func (k *s3Sink) Abort(ctx context.Context) {
	if k.uploadID == nil {
		return // never begun
	}
	cctx, cancel := k.s.c.withTimeout(ctx)
	defer cancel()
	// A failed abort leaves invisible parts for the bucket's lifecycle
	// rule; nobody is waiting for the answer.
	_, _ = k.s.c.s3.AbortMultipartUpload(cctx, &s3.AbortMultipartUploadInput{
		Bucket: aws.String(k.s.bucket), Key: aws.String(k.key), UploadId: k.uploadID,
	})
}
