package gcsstore

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/auth/credentials"
	"cloud.google.com/go/auth/httptransport"
	"cloud.google.com/go/storage"
	"google.golang.org/api/option"

	"github.com/basin-csi/basin/pkg/objstore"
)

// scopes are the OAuth scopes storage.NewClient asks for by default.
var scopes = []string{storage.ScopeFullControl, "https://www.googleapis.com/auth/cloud-platform"}

// maxIdleConnsPerHost matches the SDK's own transport.
const maxIdleConnsPerHost = 100

// tokenSwitch is the token provider of a client opened with a credentials
// JSON: every request asks it for a token, and it asks the credentials
// last set (each with its own token cache). Replacing them takes effect
// at the next request.
//
// The SDK's own transport would wrap any provider in a token cache that
// keeps the old token until it expires (up to an hour), so a client with a
// tokenSwitch uses its own http.Client with the auth library's
// authorization middleware, which does not cache.
type tokenSwitch struct {
	cur atomic.Pointer[auth.Credentials]
}

var _ auth.TokenProvider = (*tokenSwitch)(nil)

// Token implements auth.TokenProvider.
func (t *tokenSwitch) Token(ctx context.Context) (*auth.Token, error) {
	return t.cur.Load().Token(ctx)
}

// set switches to the credentials JSON raw (checked by parseCredentials).
func (t *tokenSwitch) set(raw []byte) error {
	typ, _, err := parseCredentials(raw)
	if err != nil {
		return err
	}
	c, err := credentials.NewCredentialsFromJSON(credentials.CredType(typ), raw, &credentials.DetectOptions{Scopes: scopes})
	if err != nil {
		// Not wrapped: the auth library's parse errors may quote the file.
		return fmt.Errorf("%w: gcsstore: GCS credentials of type %q could not be loaded", objstore.ErrInvalidConfig, typ)
	}
	t.cur.Store(c)
	return nil
}

// authOptions are the client options of a client authenticated through t:
// an HTTP client whose middleware takes tokens from t, and the same
// credentials given to the SDK, so that it does not look for application
// default credentials on its own (which may probe the GCE metadata
// server).
func (t *tokenSwitch) authOptions() ([]option.ClientOption, error) {
	creds := auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: t})
	base, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("%w: gcsstore: unexpected default HTTP transport", objstore.ErrInvalidConfig)
	}
	tr := base.Clone()
	tr.MaxIdleConnsPerHost = maxIdleConnsPerHost
	hc := &http.Client{Transport: tr}
	if err := httptransport.AddAuthorizationMiddleware(hc, creds); err != nil {
		return nil, fmt.Errorf("%w: gcsstore: %w", objstore.ErrInvalidConfig, err)
	}
	return []option.ClientOption{option.WithHTTPClient(hc), option.WithAuthCredentials(creds)}, nil
}

var _ objstore.CredentialsUpdater = (*Store)(nil)

// UpdateCredentials implements objstore.CredentialsUpdater: requests that
// start after it returns use the credentials JSON in c. Only a store opened
// with a credentials JSON can switch; one on application default
// credentials or an unauthenticated emulator fails with ErrInvalidConfig,
// as do access keys and empty credentials.
func (s *Store) UpdateCredentials(_ context.Context, c objstore.Credentials) error {
	switch {
	case s.tokens == nil:
		return fmt.Errorf("%w: gcsstore: the store was opened without a credentials JSON and cannot switch credentials", objstore.ErrInvalidConfig)
	case c.AccessKeyID != "" || c.SecretAccessKey != "" || c.SessionToken != "":
		return fmt.Errorf("%w: gcsstore: access keys given to a GCS store", objstore.ErrInvalidConfig)
	case len(c.GCSCredentialsJSON) == 0:
		return fmt.Errorf("%w: gcsstore: no credentials JSON to switch to", objstore.ErrInvalidConfig)
	}
	return s.tokens.set(c.GCSCredentialsJSON)
}
