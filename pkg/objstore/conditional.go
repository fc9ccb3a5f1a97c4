package objstore

import "errors"

// Conditional create (PutOptions.IfAbsent) is what makes O_EXCL exclusive
// across every mount of a bucket: the store itself decides which of two
// creators of one key wins, in one request. Each adapter uses its store's
// native condition:
//
//   - S3 and MinIO: If-None-Match: * on PutObject and on
//     CompleteMultipartUpload;
//   - Alibaba OSS: x-oss-forbid-overwrite: true (OSS's own header; its
//     S3-compatible API answers 409 FileAlreadyExists);
//   - GCS: ifGenerationMatch=0 (storage.Conditions{DoesNotExist: true});
//   - filestore: link(2) of the complete temporary file to the key's path,
//     which fails with EEXIST when the path exists.
//
// An S3-compatible store that ignores If-None-Match stores the object
// anyway: the create is then not exclusive (docs/conformance.md lists the
// stores known to honour it).

// ErrExists: a create with PutOptions.IfAbsent found an object under the
// key (or another create of the key in progress); nothing was stored.
var ErrExists = errors.New("objstore: object already exists")
