package s3store

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/basin-csi/basin/pkg/objstore"
)

// ossForbidOverwrite is OSS's own condition for a create: with it, PUT
// and CompleteMultipartUpload fail with 409 FileAlreadyExists when the
// key exists. OSS's S3-compatible API does not document If-None-Match on
// writes, so OSS gets this header as well.
const ossForbidOverwrite = "x-oss-forbid-overwrite"

// ifAbsent makes in a conditional create (objstore.PutOptions.IfAbsent) and
// returns the per-call options it needs: If-None-Match: * for S3 and
// S3-compatible stores (MinIO), plus the x-oss-forbid-overwrite header for
// OSS (a store honours the condition it knows). The SDK's uploader copies
// IfNoneMatch, and these options, to CompleteMultipartUpload, so large
// bodies are conditional too.
func (s *Store) ifAbsent(in *s3.PutObjectInput) []func(*s3.Options) {
	in.IfNoneMatch = aws.String("*")
	if s.c.cfg.Backend == objstore.BackendOSS {
		return []func(*s3.Options){s3.WithAPIOptions(smithyhttp.AddHeaderValue(ossForbidOverwrite, "true"))}
	}
	return nil
}

// existsErr reports the loss of a conditional create as objstore.ErrExists:
// 412 Precondition Failed (S3, MinIO), 409 ConditionalRequestConflict (S3:
// another conditional write of the key is in flight) and 409
// FileAlreadyExists (OSS) all mean another creator has, or is about to
// have, the key. err is already mapped (mapErr); other errors pass through.
func existsErr(err error) error {
	if errors.Is(err, objstore.ErrPreconditionFailed) || errors.Is(err, objstore.ErrExists) {
		// The precondition error is kept as text only: a lost create is
		// not a changed object (ESTALE) to the caller.
		return fmt.Errorf("%w (%v)", objstore.ErrExists, err)
	}
	return err
}
