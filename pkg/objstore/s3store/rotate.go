package s3store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/basin-csi/basin/pkg/objstore"
)

// credentialSource names the switch in the SDK's credential metadata.
const credentialSource = "BasinSwitchableCredentials"

// credentialSwitch is the credentials provider of every client: the keys
// last set (an atomic value, read by every request's signer), or the SDK's
// default chain when the store was opened without keys.
//
// It is deliberately not wrapped in an aws.CredentialsCache: static keys
// cost an atomic load to retrieve, the default chain keeps its own cache
// (config.LoadDefaultConfig wraps it), and a cache above the switch would
// hand out the old keys forever after a switch (static keys never expire,
// so the cache never asks again).
type credentialSwitch struct {
	// constant
	// chain is the SDK's default chain (already cached); nil when the store
	// was opened with keys, and then it cannot go back to the chain.
	chain aws.CredentialsProvider

	keys atomic.Pointer[aws.Credentials] // nil: use chain
}

var _ aws.CredentialsProvider = (*credentialSwitch)(nil)

// newCredentialSwitch starts with creds (which resolveConfig checked);
// zero creds mean the chain, set by install.
func newCredentialSwitch(creds objstore.Credentials) *credentialSwitch {
	s := &credentialSwitch{}
	if !creds.IsZero() {
		s.keys.Store(awsCredentials(creds))
	}
	return s
}

// install replaces the provider config.LoadDefaultConfig resolved (the
// default chain, or a cache around the explicit keys) with the switch.
// A config without any provider (anonymous) keeps none, and the switch
// is not used.
func (s *credentialSwitch) install(cfg *aws.Config) *credentialSwitch {
	if s.keys.Load() == nil {
		if cfg.Credentials == nil {
			return nil
		}
		s.chain = cfg.Credentials
	}
	cfg.Credentials = s
	return s
}

// Retrieve implements aws.CredentialsProvider.
func (s *credentialSwitch) Retrieve(ctx context.Context) (aws.Credentials, error) {
	if k := s.keys.Load(); k != nil {
		return *k, nil
	}
	if s.chain == nil {
		return aws.Credentials{}, errors.New("s3store: no credentials") // unreachable: install keeps keys or a chain
	}
	return s.chain.Retrieve(ctx)
}

// set switches to c; zero c goes back to the default chain.
func (s *credentialSwitch) set(c objstore.Credentials) error {
	switch {
	case len(c.GCSCredentialsJSON) > 0:
		return fmt.Errorf("%w: s3store: GCS credentials given to an S3 store", objstore.ErrInvalidConfig)
	case c.IsZero() && s.chain == nil:
		return fmt.Errorf("%w: s3store: the store was opened with access keys and cannot switch to the default chain", objstore.ErrInvalidConfig)
	case c.IsZero():
		s.keys.Store(nil)
		return nil
	case c.AccessKeyID == "" || c.SecretAccessKey == "":
		return fmt.Errorf("%w: s3store: credentials need both an access key id and a secret access key", objstore.ErrInvalidConfig)
	}
	s.keys.Store(awsCredentials(c))
	return nil
}

func awsCredentials(c objstore.Credentials) *aws.Credentials {
	return &aws.Credentials{
		AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionToken,
		Source: credentialSource,
	}
}

var _ objstore.CredentialsUpdater = (*Store)(nil)

// UpdateCredentials implements objstore.CredentialsUpdater: requests that
// start after it returns are signed with c. Zero c goes back to the SDK's
// default chain, which only a store opened without keys can do.
func (s *Store) UpdateCredentials(_ context.Context, c objstore.Credentials) error {
	if s.c.creds == nil {
		return fmt.Errorf("%w: s3store: the store was opened without any credential provider (anonymous)", objstore.ErrInvalidConfig)
	}
	return s.c.creds.set(c)
}
