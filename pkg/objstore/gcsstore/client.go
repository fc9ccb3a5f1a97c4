package gcsstore

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/option"

	"github.com/basin-csi/basin/pkg/objstore"
)

// projectEnv is read by NewAdmin (never at init) when the credentials JSON
// names no project; creating a bucket needs one.
const projectEnv = "GOOGLE_CLOUD_PROJECT"

// Backoff between retries. gax.Backoff draws each pause uniformly from
// [0, current cap), i.e. full jitter; the cap grows by Multiplier to Max.
const (
	backoffInitial    = 100 * time.Millisecond
	backoffMax        = 5 * time.Second
	backoffMultiplier = 2
)

// gcsChunk is the granularity GCS requires of resumable-upload chunks.
const gcsChunk = 256 << 10

// checkConfig validates cfg for this backend. needBucket is false for
// Admin, which works on buckets named per call.
func checkConfig(cfg objstore.Config, needBucket bool) (objstore.Config, error) {
	if cfg.Backend != objstore.BackendGCS {
		return cfg, fmt.Errorf("%w: gcsstore needs backend %q, got %q", objstore.ErrInvalidConfig, objstore.BackendGCS, cfg.Backend)
	}
	probe := cfg
	if !needBucket && probe.Bucket == "" {
		probe.Bucket = "-" // Validate insists on a bucket; Admin has none.
	}
	if err := probe.Validate(); err != nil {
		return cfg, err
	}
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return cfg, fmt.Errorf("%w: endpoint %q is not an http(s) URL", objstore.ErrInvalidConfig, cfg.Endpoint)
		}
	}
	return cfg.WithDefaults(), nil
}

// credentialsFile is the part of a Google credentials JSON we look at. The
// rest (keys, tokens) is handed to the auth library untouched.
type credentialsFile struct {
	Type      string `json:"type"`
	ProjectID string `json:"project_id"`
}

// parseCredentials reads the type and project of creds.GCSCredentialsJSON.
// Errors never quote the JSON: it holds a private key.
func parseCredentials(raw []byte) (option.CredentialsType, string, error) {
	var f credentialsFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return "", "", fmt.Errorf("%w: GCS credentials are not valid JSON", objstore.ErrInvalidConfig)
	}
	switch t := option.CredentialsType(f.Type); t {
	case option.ServiceAccount, option.ExternalAccount:
		return t, f.ProjectID, nil
	default:
		// Only the two kinds the Credentials contract names. Other kinds
		// (authorized_user, impersonated_service_account) are refused
		// rather than loaded blindly, as the auth library recommends.
		return "", "", fmt.Errorf("%w: GCS credentials type %q is not %q or %q",
			objstore.ErrInvalidConfig, f.Type, option.ServiceAccount, option.ExternalAccount)
	}
}

// newClient builds a storage client for cfg (already checked) and creds,
// and returns the project ID found in the credentials, if any, and the
// token switch of a client authenticated with a credentials JSON (nil
// otherwise; see rotate.go).
//
// Endpoint set and no credentials JSON: an emulator such as
// fake-gcs-server, reached without authentication (the client options do
// what STORAGE_EMULATOR_HOST would; no process environment is touched).
// Endpoint set with credentials JSON: an authenticated custom endpoint
// (e.g. Private Service Connect). Otherwise the default endpoint with the
// credentials JSON or application default credentials.
func newClient(ctx context.Context, cfg objstore.Config, creds objstore.Credentials) (*storage.Client, *tokenSwitch, string, error) {
	opts := []option.ClientOption{storage.WithDisabledClientMetrics()}
	var (
		project string
		tokens  *tokenSwitch
	)
	if len(creds.GCSCredentialsJSON) > 0 {
		_, p, err := parseCredentials(creds.GCSCredentialsJSON)
		if err != nil {
			return nil, nil, "", err
		}
		project = p
		tokens = &tokenSwitch{}
		if err := tokens.set(creds.GCSCredentialsJSON); err != nil {
			return nil, nil, "", err
		}
		auth, err := tokens.authOptions()
		if err != nil {
			return nil, nil, "", err
		}
		opts = append(opts, auth...)
	}
	if cfg.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(jsonEndpoint(cfg.Endpoint)))
		if len(creds.GCSCredentialsJSON) == 0 {
			opts = append(opts, option.WithoutAuthentication())
		}
	}
	client, err := storage.NewClient(ctx, opts...)
	if err != nil {
		// The SDK's error describes options, never the key material.
		return nil, nil, "", fmt.Errorf("%w: gcsstore: new client: %w", objstore.ErrInvalidConfig, err)
	}
	client.SetRetry(retryOptions(cfg)...)
	return client, tokens, project, nil
}

// jsonEndpoint is the JSON API base URL for an endpoint given either as
// the server root (http://127.0.0.1:4443, as STORAGE_EMULATOR_HOST) or
// with the API path already (.../storage/v1/).
func jsonEndpoint(endpoint string) string {
	base := strings.TrimSuffix(strings.TrimRight(endpoint, "/"), "/storage/v1")
	return base + "/storage/v1/"
}

// retryOptions is the retry policy of every call. All objstore operations
// are safe to repeat (Put replaces with the same bytes, Delete of a missing
// object is success, CreateBucket treats "already ours" as success), so
// RetryAlways is used instead of the SDK's "idempotent calls only"; the
// SDK's ShouldRetry (408, 429, 5xx, transient network errors) decides what
// is transient, and cfg.MaxAttempts bounds the tries.
func retryOptions(cfg objstore.Config) []storage.RetryOption {
	return []storage.RetryOption{
		storage.WithPolicy(storage.RetryAlways),
		storage.WithMaxAttempts(cfg.MaxAttempts),
		storage.WithBackoff(gax.Backoff{
			Initial:    backoffInitial,
			Max:        backoffMax,
			Multiplier: backoffMultiplier,
		}),
	}
}

// projectFromEnv is the fallback project for CreateBucket.
func projectFromEnv() string { return os.Getenv(projectEnv) }
