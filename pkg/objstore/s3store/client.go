package s3store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/basin-csi/basin/pkg/objstore"
)

// defaultRegion is used when neither the Config nor the SDK's sources
// (AWS_REGION, shared config) name one.
const defaultRegion = "us-east-1"

// maxIdleConnsPerHost keeps enough pooled connections for the cache's
// parallel ranged reads, directory prefetch's GETs (64) and the
// uploader's parts (the SDK default is 10): a request beyond the idle
// pool closes its connection after use, and the next one pays a new
// handshake.
const maxIdleConnsPerHost = 128

// client is the SDK client and what New and NewAdmin resolved around it.
type client struct {
	// constant
	s3  *s3.Client
	cfg objstore.Config // with defaults applied and the OSS endpoint filled in
	// checksum is the request checksum mode, passed on to the uploader.
	checksum aws.RequestChecksumCalculation
	// deleteOpts adds Content-MD5 to DeleteObjects outside AWS: the SDK now
	// sends only x-amz-checksum-crc32, and S3-compatible stores that
	// follow the older S3 rule refuse a multi-delete without Content-MD5
	// (aws/aws-sdk-go-v2#3258).
	deleteOpts []func(*s3.Options)
	// idle closes pooled connections on Close; nil if the HTTP client
	// cannot.
	idle interface{ CloseIdleConnections() }
	// creds is the client's credentials provider, switched by
	// UpdateCredentials (rotate.go); nil for an anonymous client.
	creds *credentialSwitch
}

// resolveConfig validates cfg for this adapter and fills in defaults.
// needBucket is false for NewAdmin.
func resolveConfig(cfg objstore.Config, creds objstore.Credentials, needBucket bool) (objstore.Config, error) {
	if needBucket {
		if err := cfg.Validate(); err != nil {
			return cfg, err
		}
	}
	if cfg.Backend != objstore.BackendS3 && cfg.Backend != objstore.BackendOSS {
		return cfg, fmt.Errorf("%w: s3store serves backends s3 and oss, not %q", objstore.ErrInvalidConfig, cfg.Backend)
	}
	if cfg.PartSize < 0 || cfg.MaxAttempts < 0 || cfg.UploadConcurrency < 0 || cfg.RequestTimeout < 0 {
		return cfg, fmt.Errorf("%w: negative tuning value", objstore.ErrInvalidConfig)
	}
	if len(creds.GCSCredentialsJSON) > 0 {
		return cfg, fmt.Errorf("%w: GCS credentials given to the %s backend", objstore.ErrInvalidConfig, cfg.Backend)
	}
	if !creds.IsZero() && (creds.AccessKeyID == "" || creds.SecretAccessKey == "") {
		// Say which field is missing, never what the other one holds.
		return cfg, fmt.Errorf("%w: credentials need both an access key id and a secret access key", objstore.ErrInvalidConfig)
	}
	cfg = cfg.WithDefaults()
	if cfg.Backend == objstore.BackendOSS {
		region, err := ossRegion(cfg.Region)
		if err != nil {
			return cfg, err
		}
		cfg.Region = region
		if cfg.Endpoint == "" {
			cfg.Endpoint = ossEndpoint(region)
		}
	}
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return cfg, fmt.Errorf("%w: endpoint %q is not an http(s) URL", objstore.ErrInvalidConfig, cfg.Endpoint)
		}
	}
	return cfg, nil
}

// isAWS reports whether cfg talks to Amazon S3 itself, which supports the
// SDK's default (flexible) checksums; every other store gets "when
// required" checksums.
func isAWS(cfg objstore.Config) bool {
	if cfg.Backend != objstore.BackendS3 {
		return false
	}
	if cfg.Endpoint == "" {
		return true
	}
	u, err := url.Parse(cfg.Endpoint)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	return strings.HasSuffix(host, ".amazonaws.com") || strings.HasSuffix(host, ".amazonaws.com.cn")
}

// retryClientClosed makes the SDK retry a 499 (statusClientClosed).
var retryClientClosed = retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
	var respErr interface{ HTTPStatusCode() int }
	if errors.As(err, &respErr) && respErr.HTTPStatusCode() == statusClientClosed {
		return aws.TrueTernary
	}
	return aws.UnknownTernary
})

// newClient builds the SDK client for a resolved cfg. flexibleChecksums
// keeps the SDK's default checksums (Amazon S3); otherwise they are sent
// and checked only where an operation requires them.
func newClient(ctx context.Context, cfg objstore.Config, creds objstore.Credentials, flexibleChecksums bool) (*client, error) {
	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = cfg.MaxAttempts
				o.Retryables = append(append([]retry.IsErrorRetryable(nil), o.Retryables...), retryClientClosed)
			})
		}),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	sw := newCredentialSwitch(creds)
	if !creds.IsZero() {
		// Keeps LoadDefaultConfig from resolving the default chain; install
		// below replaces the cache it wraps around the switch.
		opts = append(opts, config.WithCredentialsProvider(sw))
	}
	if !flexibleChecksums {
		opts = append(opts,
			config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
			config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired))
	}
	// LoadDefaultConfig honours AWS_CA_BUNDLE by adding the bundle to a
	// BuildableClient, so the HTTP client must stay one until it returns.
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: s3store: load SDK configuration: %w", objstore.ErrInvalidConfig, err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = defaultRegion
	}

	c := &client{cfg: cfg, checksum: awsCfg.RequestChecksumCalculation, creds: sw.install(&awsCfg)}
	if !flexibleChecksums {
		c.deleteOpts = append(c.deleteOpts, s3.WithAPIOptions(smithyhttp.AddContentChecksumMiddleware))
	}
	if awsCfg.HTTPClient == nil {
		awsCfg.HTTPClient = awshttp.NewBuildableClient()
	}
	if b, ok := awsCfg.HTTPClient.(*awshttp.BuildableClient); ok {
		hc := b.WithTransportOptions(func(tr *http.Transport) {
			tr.MaxIdleConnsPerHost = maxIdleConnsPerHost
			// Bounds each attempt's wait for headers once the request is
			// sent, so a hung attempt is retried instead of blocking.
			tr.ResponseHeaderTimeout = cfg.RequestTimeout
		}).Freeze()
		awsCfg.HTTPClient = hc
		c.idle, _ = hc.(interface{ CloseIdleConnections() })
	}

	c.s3 = s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		o.UsePathStyle = cfg.PathStyle
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		// Ranged GETs and multipart objects carry no full-object checksum;
		// the SDK would log a warning for each such read.
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	return c, nil
}

// close releases pooled connections.
func (c *client) close() {
	if c.idle != nil {
		c.idle.CloseIdleConnections()
	}
}

// withTimeout bounds a call without a streamed body by RequestTimeout.
func (c *client) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.cfg.RequestTimeout)
}
