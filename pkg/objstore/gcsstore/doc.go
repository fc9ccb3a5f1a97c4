// Package gcsstore is the Google Cloud Storage adapter of objstore, built on
// cloud.google.com/go/storage (JSON API for metadata and uploads, XML API
// for reads, as the SDK chooses by default).
//
// Versions are object generations in decimal. Reads with IfVersion send
// ifGenerationMatch and also compare the generation of the response, so a
// read never mixes two versions; the SDK pins the generation of the first
// response when it reopens a broken download. ModTime is whole seconds
// everywhere, because a read only learns it from Last-Modified.
//
// Listings are paged by the adapter (startOffset plus the last entry
// returned, see List), not by GCS page tokens. Keys with a "." or ".."
// segment are ErrInvalidKey.
//
// Configuration:
//   - Endpoint empty: storage.googleapis.com with the credentials JSON
//     (service_account or external_account only) or application default
//     credentials.
//   - Endpoint set, no credentials JSON: an emulator such as
//     fake-gcs-server, without authentication. The adapter passes client
//     options; it never sets STORAGE_EMULATOR_HOST.
//   - Endpoint set with credentials JSON: an authenticated custom endpoint.
//   - With a credentials JSON the client carries its own HTTP client whose
//     authorization middleware takes tokens from a switch, so
//     Store.UpdateCredentials replaces the credentials at the next request
//     (rotation; rotate.go). Stores on application default credentials or
//     an emulator cannot switch.
//   - Region: location of buckets made by Admin.CreateBucket.
//   - PartSize: resumable-upload chunk (rounded up to 256 KiB); chunks go
//     up one at a time, as GCS resumable uploads require.
//   - UploadConcurrency: deletes in flight in DeletePrefix.
//   - MaxAttempts: tries per request, with jittered exponential backoff,
//     for uploads too (the SDK alone would retry those without bound).
//   - RequestTimeout: bounds each call that streams no body (including
//     the SDK's retries of it), the wait for a read's response headers,
//     and every read of a body chunk.
//
// Client telemetry to Google Cloud Monitoring is switched off.
//
// Known deviations of fake-gcs-server v1.56 from GCS, found by the tests:
//   - Read preconditions (ifGenerationMatch) are ignored; the adapter's own
//     generation check still yields ErrPreconditionFailed.
//   - Deleting a non-empty bucket answers 412 instead of 409.
//   - With a delimiter, maxResults limits objects only and every page
//     repeats all common prefixes at or after the page token (the
//     adapter's own paging is immune).
//   - An upload into a missing bucket creates the bucket.
//   - Filesystem backend only: directory markers ("dir/") are accepted but
//     not stored, an object "a" cannot coexist with "a/b" (500), and
//     "a/../b" is stored as "b". The memory backend has none of these.
//   - Generations are microsecond timestamps, not GCS's opaque numbers.
package gcsstore
