// Package objstore is Basin's only view of object storage: one small
// interface (Store for the objects of one bucket, Admin for buckets), the
// sentinel errors every adapter maps its SDK's errors to, and the typed
// configuration the adapters are built from.
//
// Adapters live in sub-packages (s3store for S3 and S3-compatible stores and
// Alibaba OSS, gcsstore, filestore) and are chosen by objstore/backend.Open.
// objstoretest holds an in-memory fake and the conformance suite every
// adapter passes against its real server.
//
// Keys are the full object keys inside the bucket ('/'-separated, no leading
// slash). Adapters never interpret keys as file paths except filestore, which
// refuses keys that would escape its root.
package objstore
