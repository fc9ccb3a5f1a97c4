package volumeattr

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// Secrets are the values of a Kubernetes secret handed to the driver. The
// credentials are secret; Endpoint and Region are not, but may be kept in
// the secret (see SecretEndpoint). String and GoString redact, so a
// Secrets (or an Attributes holding one) is safe to print.
type Secrets struct {
	AccessKeyID        string
	SecretAccessKey    string
	SessionToken       string
	GCSCredentialsJSON string
	Endpoint           string
	Region             string
	// SharedCacheAccessKeyID and SharedCacheSecretAccessKey are the
	// shared cache tier's access key pair.
	SharedCacheAccessKeyID     string
	SharedCacheSecretAccessKey string
}

// ParseSecrets reads a secret map. Values are trimmed of surrounding white
// space (secrets made from files often end in a newline); empty values
// count as absent. Unknown keys are an error that names the key. No error
// quotes a value.
func ParseSecrets(m map[string]string) (Secrets, error) {
	s, errs := parseSecrets(m)
	if len(errs) > 0 {
		return Secrets{}, invalid(errs)
	}
	return s, nil
}

// parseSecrets is ParseSecrets returning the problems one by one.
func parseSecrets(m map[string]string) (Secrets, []error) {
	var s Secrets
	var errs []error
	var unknown []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := strings.TrimSpace(m[k])
		switch k {
		case SecretAccessKeyID:
			s.AccessKeyID = v
		case SecretSecretAccessKey:
			s.SecretAccessKey = v
		case SecretSessionToken:
			s.SessionToken = v
		case SecretGCSCredentialsJSON:
			if v != "" && !json.Valid([]byte(v)) {
				errs = append(errs, fmt.Errorf("secret key %s: not valid JSON (want the service-account key file's text)", k))
			}
			s.GCSCredentialsJSON = v
		case SecretSharedCacheAccessKeyID:
			s.SharedCacheAccessKeyID = v
		case SecretSharedCacheSecretAccessKey:
			s.SharedCacheSecretAccessKey = v
		case SecretEndpoint:
			if err := checkIfSet(v, mountspec.CheckEndpoint); err != nil {
				errs = append(errs, fmt.Errorf("secret key %s: %w", k, err))
				continue
			}
			s.Endpoint = v
		case SecretRegion:
			if err := checkIfSet(v, mountspec.CheckRegion); err != nil {
				errs = append(errs, fmt.Errorf("secret key %s: %w", k, err))
				continue
			}
			s.Region = v
		default:
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		errs = append(errs, fmt.Errorf("secret: %w", unknownKeysError(unknown, SecretKeys())))
	}
	return s, errs
}

// checkIfSet runs check on v unless v is empty.
func checkIfSet(v string, check func(string) error) error {
	if v == "" {
		return nil
	}
	return check(v)
}

// CheckBackend reports, as an error wrapping ErrInvalid, credentials that
// do not fit the backend: half an access key pair, GCS keys for S3, any
// credential for the file backend.
func (s Secrets) CheckBackend(b objstore.Backend) error {
	if errs := s.checkBackend(b); len(errs) > 0 {
		return invalid(errs)
	}
	return nil
}

func (s Secrets) checkBackend(b objstore.Backend) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if (s.SharedCacheAccessKeyID == "") != (s.SharedCacheSecretAccessKey == "") {
		bad("secret: %s and %s go together; one of them is missing", SecretSharedCacheAccessKeyID, SecretSharedCacheSecretAccessKey)
	}
	keys := s.AccessKeyID != "" || s.SecretAccessKey != "" || s.SessionToken != ""
	switch b {
	case objstore.BackendS3, objstore.BackendOSS:
		if s.GCSCredentialsJSON != "" {
			bad("secret key %s: the %s backend takes %s and %s", SecretGCSCredentialsJSON, b, SecretAccessKeyID, SecretSecretAccessKey)
		}
		if keys && (s.AccessKeyID == "" || s.SecretAccessKey == "") {
			bad("secret: %s and %s go together; one of them is missing", SecretAccessKeyID, SecretSecretAccessKey)
		}
	case objstore.BackendGCS:
		if keys {
			bad("secret: the gcs backend takes %s, not access keys", SecretGCSCredentialsJSON)
		}
	case objstore.BackendFile:
		if keys || s.GCSCredentialsJSON != "" {
			bad("secret: the file backend takes no credentials")
		}
	}
	return errs
}

// HasCredentials reports whether the secret holds any credential. Without
// one, the backends use their default chain (environment, IRSA / web
// identity, instance metadata, GCP application default credentials).
func (s Secrets) HasCredentials() bool {
	return !s.Credentials().IsZero()
}

// Credentials converts s for objstore.
func (s Secrets) Credentials() objstore.Credentials {
	c := objstore.Credentials{
		AccessKeyID:     s.AccessKeyID,
		SecretAccessKey: s.SecretAccessKey,
		SessionToken:    s.SessionToken,
	}
	if s.GCSCredentialsJSON != "" {
		c.GCSCredentialsJSON = []byte(s.GCSCredentialsJSON)
	}
	return c
}

// SharedCacheCredentials converts the shared cache tier's keys for
// objstore (zero: the default chain).
func (s Secrets) SharedCacheCredentials() objstore.Credentials {
	return objstore.Credentials{AccessKeyID: s.SharedCacheAccessKeyID, SecretAccessKey: s.SharedCacheSecretAccessKey}
}

// Map is ParseSecrets' inverse: the secret map holding s.
func (s Secrets) Map() map[string]string {
	m := map[string]string{}
	for k, v := range map[string]string{
		SecretAccessKeyID: s.AccessKeyID, SecretSecretAccessKey: s.SecretAccessKey,
		SecretSessionToken: s.SessionToken, SecretGCSCredentialsJSON: s.GCSCredentialsJSON,
		SecretEndpoint: s.Endpoint, SecretRegion: s.Region,
		SecretSharedCacheAccessKeyID: s.SharedCacheAccessKeyID, SecretSharedCacheSecretAccessKey: s.SharedCacheSecretAccessKey,
	} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// String names the keys that are set, never their values.
func (s Secrets) String() string {
	keys := slices.Sorted(maps.Keys(s.Map()))
	if len(keys) == 0 {
		return "Secrets{}"
	}
	return "Secrets{" + strings.Join(keys, ",") + ": REDACTED}"
}

// GoString redacts like String, for %#v.
func (s Secrets) GoString() string { return s.String() }
