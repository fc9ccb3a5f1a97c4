package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/basin-csi/basin/pkg/objstore"
)

// errSizeMismatch: the body did not have PutOptions.Size bytes. Nothing was
// stored.
var errSizeMismatch = errors.New("s3store: body length differs from PutOptions.Size")

// Put stores body under key: one PutObject when opts.Size is known and at
// most PartSize, the SDK's multipart uploader otherwise.
func (s *Store) Put(ctx context.Context, key string, body io.Reader, opts objstore.PutOptions) (objstore.ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return objstore.ObjectInfo{}, err
	}
	if body == nil {
		body = http.NoBody
	}
	if opts.Size >= 0 && opts.Size <= s.c.cfg.PartSize {
		return s.putSingle(ctx, key, body, opts)
	}
	return s.putMultipart(ctx, key, body, opts)
}

// putSingle buffers the body (at most PartSize bytes) so the SDK can sign
// and retry it, and stores it with one PutObject.
func (s *Store) putSingle(ctx context.Context, key string, body io.Reader, opts objstore.PutOptions) (objstore.ObjectInfo, error) {
	data, err := io.ReadAll(&exactReader{r: body, left: opts.Size})
	if err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("s3store: put %s/%q: read body: %w", s.bucket, key, err)
	}
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		Metadata:      opts.Metadata,
	}
	if opts.ContentType != "" {
		in.ContentType = aws.String(opts.ContentType)
	}
	var callOpts []func(*s3.Options)
	if opts.IfAbsent {
		callOpts = s.ifAbsent(in)
	}
	out, err := s.c.s3.PutObject(ctx, in, callOpts...)
	if err != nil {
		err = mapErr(ctx, "PutObject", s.bucket, key, err)
		if opts.IfAbsent {
			err = existsErr(err)
		}
		return objstore.ObjectInfo{}, err
	}
	// PutObject returns no Last-Modified; the response's Date is when the
	// store committed the object, to the second like Last-Modified.
	return objstore.ObjectInfo{
		Key:      key,
		Size:     int64(len(data)),
		Version:  version(out.ETag),
		ModTime:  responseDate(out.ResultMetadata),
		Metadata: objstore.NormalizeMetadata(opts.Metadata),
	}, nil
}

// putMultipart streams the body through the SDK's uploader (parts of
// PartSize, UploadConcurrency at once; a body shorter than one part still
// ends as a single PutObject) and HEADs the result for its attributes.
func (s *Store) putMultipart(ctx context.Context, key string, body io.Reader, opts objstore.PutOptions) (objstore.ObjectInfo, error) {
	cfg := s.c.cfg
	partSize := uploadPartSize(cfg.PartSize, opts.Size)
	checksum := s.c.checksum
	if checksum == 0 {
		checksum = aws.RequestChecksumCalculationWhenSupported
	}
	// The manager is deprecated in favour of feature/s3/transfermanager,
	// which is not stable yet; the team pins manager v1.23.21.
	// exactReader hides io.ReaderAt and io.Seeker so the uploader reads
	// the body once, from its current position.
	counted := &exactReader{r: body, left: opts.Size}
	in := &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key), Body: counted, Metadata: opts.Metadata}
	if opts.ContentType != "" {
		in.ContentType = aws.String(opts.ContentType)
	}
	var callOpts []func(*s3.Options)
	if opts.IfAbsent {
		callOpts = s.ifAbsent(in)
	}
	up := manager.NewUploader(s.c.s3, func(u *manager.Uploader) { //nolint:staticcheck // SA1019, see above
		u.PartSize = partSize
		u.Concurrency = cfg.UploadConcurrency
		u.RequestChecksumCalculation = checksum
		u.ClientOptions = append(u.ClientOptions, callOpts...)
	})
	out, err := up.Upload(ctx, in) //nolint:staticcheck // SA1019, see above
	if err != nil {
		err = mapErr(ctx, "Upload", s.bucket, key, err)
		if opts.IfAbsent {
			err = existsErr(err)
		}
		return objstore.ObjectInfo{}, err
	}
	oi, err := s.head(ctx, key, version(out.ETag))
	if err != nil {
		// The object is stored; only its attributes are unknown (it may
		// already be overwritten). Failing would make the caller upload
		// it again, so report what the upload itself knows.
		return objstore.ObjectInfo{Key: key, Size: counted.n, Version: version(out.ETag), ModTime: now()}, nil
	}
	return oi, nil
}

// uploadPartSize is the part size for a body of size bytes (< 0: unknown):
// PartSize, at least S3's 5 MiB minimum, grown so that a known size fits
// S3's 10,000-part limit. An unknown size is limited to 10,000 parts.
func uploadPartSize(partSize, size int64) int64 {
	partSize = max(partSize, manager.MinUploadPartSize)
	if size > partSize*maxParts {
		partSize = (size + maxParts - 1) / maxParts
	}
	return partSize
}

// responseDate returns the Date header of an SDK response, or now.
func responseDate(md middleware.Metadata) time.Time {
	if resp, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok {
		if t, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
			return t.UTC()
		}
	}
	return now()
}

// now is the current time at ModTime precision.
func now() time.Time { return time.Now().UTC().Truncate(time.Second) }

// exactReader passes a body through, counts it, and, when the expected
// length is known (left >= 0), fails on a body shorter or longer than that
// so a wrong PutOptions.Size never stores a truncated object.
type exactReader struct {
	r    io.Reader
	left int64 // bytes still expected; < 0: unknown
	n    int64 // bytes read so far
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.left < 0 {
		n, err := e.r.Read(p)
		e.n += int64(n)
		return n, err
	}
	if e.left == 0 {
		// Expect EOF: probe for one extra byte.
		var one [1]byte
		n, err := io.ReadFull(e.r, one[:])
		if n > 0 {
			return 0, fmt.Errorf("%w: more than %d bytes", errSizeMismatch, e.n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return 0, io.EOF
		}
		return 0, err
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.n += int64(n)
	e.left -= int64(n)
	if err == io.EOF && e.left > 0 {
		return n, fmt.Errorf("%w: %d bytes, %d missing", errSizeMismatch, e.n, e.left)
	}
	if err == io.EOF {
		err = nil // the next call confirms the end
	}
	return n, err
}
