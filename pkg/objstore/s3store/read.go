package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Stat returns the object's attributes, or ErrNotFound.
func (s *Store) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return objstore.ObjectInfo{}, err
	}
	return s.head(ctx, key, "")
}

// head is HeadObject, conditional on ifVersion when it is set.
func (s *Store) head(ctx context.Context, key, ifVersion string) (objstore.ObjectInfo, error) {
	out, err := s.headObject(ctx, key, ifVersion)
	if err != nil {
		return objstore.ObjectInfo{}, err
	}
	oi := info(key, out.ContentLength, out.ETag, out.LastModified)
	oi.Metadata = objstore.NormalizeMetadata(out.Metadata)
	return oi, nil
}

// headObject is head returning the SDK's whole answer.
func (s *Store) headObject(ctx context.Context, key, ifVersion string) (*s3.HeadObjectOutput, error) {
	cctx, cancel := s.c.withTimeout(ctx)
	defer cancel()
	in := &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)}
	if ifVersion != "" {
		in.IfMatch = aws.String(quoted(ifVersion))
	}
	out, err := s.c.s3.HeadObject(cctx, in)
	if err != nil {
		return nil, mapErr(ctx, "HeadObject", s.bucket, key, err)
	}
	return out, nil
}

// Read streams a byte range of the object with one GetObject. The wait for
// the response headers and every body read are bounded by RequestTimeout.
func (s *Store) Read(ctx context.Context, key string, opts objstore.ReadOptions) (io.ReadCloser, objstore.ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return nil, objstore.ObjectInfo{}, err
	}
	if opts.Offset < 0 {
		return nil, objstore.ObjectInfo{}, fmt.Errorf("%w: negative offset %d", objstore.ErrInvalidRange, opts.Offset)
	}
	if opts.Length == 0 {
		return s.readNothing(ctx, key, opts)
	}
	in := &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)}
	if opts.IfVersion != "" {
		in.IfMatch = aws.String(quoted(opts.IfVersion))
	}
	ranged := opts.Offset > 0 || opts.Length > 0
	if ranged {
		in.Range = aws.String(byteRange(opts.Offset, opts.Length))
	}

	timeout := s.c.cfg.RequestTimeout
	rctx, cancel := context.WithCancel(ctx)
	headers := time.AfterFunc(timeout, cancel)
	out, err := s.getObject(rctx, in)
	if !headers.Stop() {
		if err == nil {
			_ = out.Body.Close()
		}
		cancel()
		err = fmt.Errorf("%w: no response headers within %v", objstore.ErrUnavailable, timeout)
		return nil, objstore.ObjectInfo{}, mapErr(ctx, "GetObject", s.bucket, key, err)
	}
	if err != nil {
		cancel()
		if errors.Is(classify(err), objstore.ErrInvalidRange) {
			// S3 answers 416 for Offset == Size, which the contract
			// allows; readNothing tells it apart from Offset > Size.
			return s.readNothing(ctx, key, opts)
		}
		return nil, objstore.ObjectInfo{}, mapErr(ctx, "GetObject", s.bucket, key, err)
	}

	body := &bodyReader{
		ctx: ctx, bucket: s.bucket, key: key,
		r: objstore.NewStallReader(out.Body, timeout, cancel),
	}
	oi := info(key, out.ContentLength, out.ETag, out.LastModified)
	switch {
	case aws.ToString(out.ContentRange) != "":
		total, ok := rangeTotal(aws.ToString(out.ContentRange))
		if !ok {
			_ = body.Close()
			return nil, oi, mapErr(ctx, "GetObject", s.bucket, key,
				fmt.Errorf("%w: unparsable Content-Range %q", objstore.ErrUnavailable, aws.ToString(out.ContentRange)))
		}
		oi.Size = total
	case ranged:
		// The store ignored Range and sent the whole object: cut the
		// range out of it here.
		if err := body.narrow(oi.Size, opts); err != nil {
			_ = body.Close()
			return nil, oi, err
		}
	}
	return body, oi, nil
}

// readNothing serves reads that return no bytes: Length == 0, or Offset at
// the end of the object. It checks the object (and IfVersion) with a HEAD.
func (s *Store) readNothing(ctx context.Context, key string, opts objstore.ReadOptions) (io.ReadCloser, objstore.ObjectInfo, error) {
	oi, err := s.head(ctx, key, opts.IfVersion)
	if err != nil {
		return nil, objstore.ObjectInfo{}, err
	}
	if opts.Offset > oi.Size {
		return nil, objstore.ObjectInfo{}, fmt.Errorf("%w: s3store: read %s/%q at %d, size is %d",
			objstore.ErrInvalidRange, s.bucket, key, opts.Offset, oi.Size)
	}
	return http.NoBody, oi, nil
}

// byteRange is the HTTP Range header for offset and length (< 0: to the end).
func byteRange(offset, length int64) string {
	if length < 0 || length > math.MaxInt64-offset {
		return fmt.Sprintf("bytes=%d-", offset)
	}
	return fmt.Sprintf("bytes=%d-%d", offset, offset+length-1)
}

// rangeTotal parses the complete length out of "bytes 0-99/1000".
func rangeTotal(contentRange string) (int64, bool) {
	_, total, ok := strings.Cut(contentRange, "/")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(total, 10, 64)
	return n, err == nil && n >= 0
}

// bodyReader is a Read body: it maps read errors to sentinels and may be
// narrowed to a range.
type bodyReader struct {
	// constant
	ctx         context.Context // the caller's, to tell cancellation from failure
	bucket, key string
	r           io.ReadCloser // the stall reader over the SDK body
	limited     io.Reader     // r, or a LimitReader over it after narrow
}

func (b *bodyReader) Read(p []byte) (int, error) {
	src := io.Reader(b.r)
	if b.limited != nil {
		src = b.limited
	}
	n, err := src.Read(p)
	if err != nil && err != io.EOF {
		err = mapErr(b.ctx, "read body", b.bucket, b.key, err)
	}
	return n, err
}

func (b *bodyReader) Close() error { return b.r.Close() }

// narrow skips to opts.Offset and limits to opts.Length in a body that
// holds the whole object of the given size.
func (b *bodyReader) narrow(size int64, opts objstore.ReadOptions) error {
	if opts.Offset > size {
		return fmt.Errorf("%w: s3store: read %s/%q at %d, size is %d",
			objstore.ErrInvalidRange, b.bucket, b.key, opts.Offset, size)
	}
	if _, err := io.CopyN(io.Discard, b, opts.Offset); err != nil {
		return err
	}
	if opts.Length >= 0 {
		b.limited = io.LimitReader(b.r, opts.Length)
	}
	return nil
}
