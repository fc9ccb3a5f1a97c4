package s3store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/basin-csi/basin/pkg/objstore"
)

// defaultMaxKeys is the page size when ListOptions.MaxKeys is 0 (also
// S3's own maximum).
const defaultMaxKeys = 1000

// List returns one page of ListObjectsV2. Keys come URL-encoded from the
// store (encoding-type=url) so that keys holding characters XML cannot carry
// still list.
func (s *Store) List(ctx context.Context, opts objstore.ListOptions) (objstore.ListPage, error) {
	maxKeys := opts.MaxKeys
	if maxKeys <= 0 {
		maxKeys = defaultMaxKeys
	}
	in := &s3.ListObjectsV2Input{
		Bucket:       aws.String(s.bucket),
		MaxKeys:      aws.Int32(int32(min(maxKeys, math.MaxInt32))),
		EncodingType: types.EncodingTypeUrl,
	}
	if opts.Prefix != "" {
		in.Prefix = aws.String(opts.Prefix)
	}
	if opts.Delimiter != "" {
		in.Delimiter = aws.String(opts.Delimiter)
	}
	if opts.ContinuationToken != "" {
		in.ContinuationToken = aws.String(opts.ContinuationToken)
	}
	cctx, cancel := s.c.withTimeout(ctx)
	defer cancel()
	out, err := s.c.s3.ListObjectsV2(cctx, in)
	if err != nil {
		return objstore.ListPage{}, mapErr(ctx, "ListObjectsV2", s.bucket, opts.Prefix, err)
	}

	// Stores that ignore encoding-type say so by leaving it out of the
	// response; their keys are then sent as they are.
	decode := func(v *string) (string, error) { return aws.ToString(v), nil }
	if out.EncodingType == types.EncodingTypeUrl {
		decode = func(v *string) (string, error) { return url.QueryUnescape(aws.ToString(v)) }
	}
	page := objstore.ListPage{
		Objects:        make([]objstore.ObjectInfo, 0, len(out.Contents)),
		CommonPrefixes: make([]string, 0, len(out.CommonPrefixes)),
	}
	for _, o := range out.Contents {
		key, err := decode(o.Key)
		if err != nil {
			return objstore.ListPage{}, mapErr(ctx, "ListObjectsV2", s.bucket, opts.Prefix,
				fmt.Errorf("%w: undecodable key %q", objstore.ErrUnavailable, aws.ToString(o.Key)))
		}
		page.Objects = append(page.Objects, info(key, o.Size, o.ETag, o.LastModified))
	}
	for _, p := range out.CommonPrefixes {
		prefix, err := decode(p.Prefix)
		if err != nil {
			return objstore.ListPage{}, mapErr(ctx, "ListObjectsV2", s.bucket, opts.Prefix,
				fmt.Errorf("%w: undecodable prefix %q", objstore.ErrUnavailable, aws.ToString(p.Prefix)))
		}
		page.CommonPrefixes = append(page.CommonPrefixes, prefix)
	}
	if aws.ToBool(out.IsTruncated) {
		page.NextToken = aws.ToString(out.NextContinuationToken)
	}
	return page, nil
}

// Delete removes the object; a missing key is not an error, a missing
// bucket is.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	cctx, cancel := s.c.withTimeout(ctx)
	defer cancel()
	_, err := s.c.s3.DeleteObject(cctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil && !isNoSuchBucket(err) && errors.Is(classify(err), objstore.ErrNotFound) {
		return nil
	}
	return mapErr(ctx, "DeleteObject", s.bucket, key, err)
}

// DeletePrefix lists the keys under prefix and removes them with
// DeleteObjects, one call per page of up to 1000 keys.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	deleted := 0
	opts := objstore.ListOptions{Prefix: prefix, MaxKeys: s.deleteBatch}
	for {
		page, err := s.List(ctx, opts)
		if err != nil {
			return deleted, err
		}
		if len(page.Objects) > 0 {
			keys := make([]string, len(page.Objects))
			for i, o := range page.Objects {
				keys[i] = o.Key
			}
			n, err := s.deleteObjects(ctx, keys)
			deleted += n
			if err != nil {
				return deleted, err
			}
		}
		if page.NextToken == "" {
			return deleted, nil
		}
		opts.ContinuationToken = page.NextToken
	}
}

// DeleteKeys removes keys with DeleteObjects, one request per batch of up
// to 1000 (objstore.KeysDeleter), and stops at the first failed batch. A
// missing key counts as removed.
func (s *Store) DeleteKeys(ctx context.Context, keys []string) (int, error) {
	deleted := 0
	for len(keys) > 0 {
		n := min(len(keys), s.deleteBatch)
		for _, k := range keys[:n] {
			if err := checkKey(k); err != nil {
				return deleted, err
			}
		}
		got, err := s.deleteObjects(ctx, keys[:n])
		deleted += got
		if err != nil {
			return deleted, err
		}
		keys = keys[n:]
	}
	return deleted, nil
}

// deleteObjects removes one batch with DeleteObjects and returns how many
// keys went; the first per-key failure becomes the error.
func (s *Store) deleteObjects(ctx context.Context, keys []string) (int, error) {
	ids := make([]types.ObjectIdentifier, len(keys))
	for i, k := range keys {
		ids[i] = types.ObjectIdentifier{Key: aws.String(k)}
	}
	cctx, cancel := s.c.withTimeout(ctx)
	defer cancel()
	out, err := s.c.s3.DeleteObjects(cctx, &s3.DeleteObjectsInput{
		Bucket: aws.String(s.bucket),
		Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
	}, s.c.deleteOpts...)
	if err != nil {
		return 0, mapErr(ctx, "DeleteObjects", s.bucket, "", err)
	}
	failed := 0
	var first error
	for _, e := range out.Errors {
		if aws.ToString(e.Code) == "NoSuchKey" {
			continue // gone already: what we wanted
		}
		failed++
		if first == nil {
			apiErr := &smithy.GenericAPIError{Code: aws.ToString(e.Code), Message: aws.ToString(e.Message)}
			first = mapErr(ctx, "DeleteObjects", s.bucket, aws.ToString(e.Key), apiErr)
		}
	}
	return len(keys) - failed, first
}
