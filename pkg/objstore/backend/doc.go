// Package backend opens the objstore adapter a Config names: s3store for S3
// and Alibaba OSS, gcsstore for GCS, filestore for a local directory. It is
// the only package that imports every adapter, so the layers above depend
// on objstore alone.
package backend
