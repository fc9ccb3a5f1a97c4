package objstore

import (
	"fmt"
	"time"
)

// Backend names a kind of object store.
type Backend string

// The supported backends.
const (
	BackendS3   Backend = "s3"
	BackendOSS  Backend = "oss"
	BackendGCS  Backend = "gcs"
	BackendFile Backend = "file"
)

// Backends lists the accepted Backend values, for error messages.
var Backends = []Backend{BackendS3, BackendOSS, BackendGCS, BackendFile}

// Config says how to reach one bucket. It never holds secrets: those are in
// Credentials, passed separately so that a Config may be logged.
type Config struct {
	Backend Backend
	// Bucket is the bucket name; for BackendFile the absolute directory
	// that plays the bucket.
	Bucket string
	// Endpoint overrides the service URL (MinIO, OSS region endpoint,
	// fake-gcs-server). Empty means the backend's default.
	Endpoint string
	// Region is the S3/OSS signing region. Empty lets the SDK decide
	// (AWS_REGION, profile) and falls back to us-east-1.
	Region string
	// Project is the GCS project that owns buckets the controller creates.
	// Empty means the credentials' project_id, then $GOOGLE_CLOUD_PROJECT.
	Project string
	// PathStyle addresses S3 buckets as endpoint/bucket instead of
	// bucket.endpoint (MinIO and most S3-compatible stores need it).
	PathStyle bool
	// RequestTimeout bounds one request without a body to stream (stat,
	// list, delete...) and the wait for a read's response headers and for
	// each chunk of its body. Zero means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxAttempts bounds tries per request (first try + retries) for
	// throttling and transient errors. Zero means DefaultMaxAttempts.
	MaxAttempts int
	// PartSize is the multipart / resumable upload chunk. Zero means
	// DefaultPartSize.
	PartSize int64
	// UploadConcurrency is the number of parts uploaded at once. Zero means
	// DefaultUploadConcurrency.
	UploadConcurrency int
}

// Defaults for Config's zero values.
const (
	DefaultRequestTimeout    = 30 * time.Second
	DefaultMaxAttempts       = 5
	DefaultPartSize          = 8 << 20
	DefaultUploadConcurrency = 4
)

// WithDefaults returns c with zero values replaced by the defaults.
func (c Config) WithDefaults() Config {
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.PartSize <= 0 {
		c.PartSize = DefaultPartSize
	}
	if c.UploadConcurrency <= 0 {
		c.UploadConcurrency = DefaultUploadConcurrency
	}
	return c
}

// Validate checks the fields every backend needs.
func (c Config) Validate() error {
	switch c.Backend {
	case BackendS3, BackendOSS, BackendGCS, BackendFile:
	default:
		return fmt.Errorf("%w: backend %q is not one of %v", ErrInvalidConfig, c.Backend, Backends)
	}
	if c.Bucket == "" {
		return fmt.Errorf("%w: bucket is empty", ErrInvalidConfig)
	}
	if c.PartSize < 0 || c.MaxAttempts < 0 || c.UploadConcurrency < 0 || c.RequestTimeout < 0 {
		return fmt.Errorf("%w: negative tuning value", ErrInvalidConfig)
	}
	return nil
}

// Credentials are the secrets for one store. The zero value means "use the
// backend's default chain" (environment, shared files, IRSA / web identity,
// instance metadata, GCP application default credentials).
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// GCSCredentialsJSON is a service-account or external-account key file.
	GCSCredentialsJSON []byte
}

// IsZero reports whether no explicit credential is set.
func (c Credentials) IsZero() bool {
	return c.AccessKeyID == "" && c.SecretAccessKey == "" && c.SessionToken == "" && len(c.GCSCredentialsJSON) == 0
}

// String redacts every secret so Credentials can never leak through %v.
func (c Credentials) String() string {
	if c.IsZero() {
		return "Credentials{default chain}"
	}
	return "Credentials{REDACTED}"
}

// GoString redacts like String, for %#v.
func (c Credentials) GoString() string { return c.String() }
