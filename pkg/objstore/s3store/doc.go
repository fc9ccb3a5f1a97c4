// Package s3store is the objstore adapter for Amazon S3, S3-compatible
// stores (MinIO, Ceph RGW, ...) and Alibaba OSS through its S3-compatible
// API (see oss.go for why), built on aws-sdk-go-v2.
//
// Client: static keys when Credentials are given, otherwise the SDK's
// default chain unchanged (environment, shared files, IRSA / web identity,
// instance roles). Store.UpdateCredentials swaps the keys under a running
// store (credential rotation; rotate.go). AWS_CA_BUNDLE is honoured by the
// SDK. Region: Config,
// else the SDK's sources, else us-east-1. Outside Amazon S3 the SDK sends
// and checks checksums only where an operation requires them, and adds
// Content-MD5 to DeleteObjects, as S3-compatible stores expect.
//
// Retries and timeouts: the SDK's standard retryer (exponential backoff
// with jitter) makes at most Config.MaxAttempts tries. Config.RequestTimeout
// bounds each attempt's wait for response headers, every call without a
// streamed body as a whole (stat, list, delete...), the wait for a Read's
// headers, and each chunk of a Read's body (objstore.NewStallReader), so a
// dead connection surfaces as ErrUnavailable. Uploads and copies are
// otherwise bounded by the caller's context: their duration grows with the
// object.
//
// Errors: every SDK error goes through one function, mapErr in errors.go,
// which wraps the matching objstore sentinel. No error or log line carries
// a secret: credentials travel only inside the SDK's signer.
//
// Objects: versions are ETags without quotes; ModTime is UTC in whole
// seconds (Last-Modified's precision) everywhere. Bodies up to
// Config.PartSize are stored with one PutObject, larger or unsized ones
// with the SDK's multipart uploader. Copies up to 256 MiB are one
// CopyObject, larger ones a parallel multipart copy; both are pinned to the
// source version they saw.
package s3store
