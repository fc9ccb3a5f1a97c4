package objstore

import (
	"bytes"
	"context"
)

// CredentialsUpdater is implemented by stores whose credentials can be
// replaced while they serve (credential rotation without a remount):
// s3store.Store (S3, OSS) and gcsstore.Store. Callers that hold a Store
// behind a wrapper (WithPrefix) keep the adapter's value to reach it.
type CredentialsUpdater interface {
	// UpdateCredentials makes every request that starts after it returns
	// use c. Requests already signed finish with the old credentials. It
	// fails with ErrInvalidConfig, and keeps the old credentials, when c
	// does not fit the store (wrong kind, half a key pair) or when the
	// store was opened in a mode that cannot switch (see the adapter).
	// Errors never quote a credential.
	UpdateCredentials(ctx context.Context, c Credentials) error
}

// Equal reports whether c and o hold the same secrets.
func (c Credentials) Equal(o Credentials) bool {
	return c.AccessKeyID == o.AccessKeyID && c.SecretAccessKey == o.SecretAccessKey &&
		c.SessionToken == o.SessionToken && bytes.Equal(c.GCSCredentialsJSON, o.GCSCredentialsJSON)
}
