package s3store

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyauth "github.com/aws/smithy-go/auth"
	"github.com/aws/smithy-go/encoding/httpbinding"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// The GET of the read path, without the SDK's per-call machinery. A cold
// small-file epoch spends about a fifth of the FUSE process's CPU in
// GetObject outside net/http: a middleware stack built for every call,
// the endpoint rules evaluated, the auth scheme resolved and the options
// copied anew (docs/architecture.md, "CPU per cold small file"). fastGet
// resolves the bucket's endpoint and signing scope once, with the SDK's
// own resolver, and then sends each GET on the client's HTTP client,
// signed by the SDK's v4 signer with the client's credentials and retried
// by the client's retryer (the same token bucket as every other call).
// Its errors answer to the retryer and to classify as the SDK's do: a
// transport error is a smithyhttp.RequestSendError, an error response an
// apiError with the S3 code and the HTTP status.
//
// It applies only where the endpoint rules give plain SigV4 for service
// s3 (a general purpose bucket, any S3-compatible endpoint). Anything
// else (S3 Express directory buckets, access point and Object Lambda
// ARNs) keeps the SDK's GetObject.

// emptyPayloadHash is the SHA-256 of an empty body, the payload hash of a
// GET.
const emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// maxErrorBody bounds the bytes read of an error response.
const maxErrorBody = 64 << 10

// fastGet sends GetObject requests for one bucket.
type fastGet struct {
	// constant
	hc      aws.HTTPClient
	creds   aws.CredentialsProvider // nil: anonymous, unsigned
	retryer aws.Retryer
	signer  *v4.Signer
	base    url.URL     // the bucket's URL; object keys are appended to its path
	headers http.Header // the endpoint's own headers
	region  string      // the signing region
}

// newFastGet returns the fast GET for bucket on the client configured by
// opts, or nil when the endpoint rules ask for anything but plain SigV4
// for s3.
func newFastGet(ctx context.Context, opts s3.Options, bucket string) *fastGet {
	if opts.EndpointResolverV2 == nil || opts.HTTPClient == nil || opts.Retryer == nil ||
		opts.UseAccelerate || opts.UseARNRegion ||
		opts.EndpointOptions.UseFIPSEndpoint == aws.FIPSEndpointStateEnabled ||
		opts.EndpointOptions.UseDualStackEndpoint == aws.DualStackEndpointStateEnabled {
		return nil
	}
	ep, err := opts.EndpointResolverV2.ResolveEndpoint(ctx, s3.EndpointParameters{
		Bucket: aws.String(bucket), Region: aws.String(opts.Region), Endpoint: opts.BaseEndpoint,
		ForcePathStyle: aws.Bool(opts.UsePathStyle), Accelerate: aws.Bool(false),
		UseFIPS: aws.Bool(false), UseDualStack: aws.Bool(false),
		DisableMultiRegionAccessPoints: aws.Bool(opts.DisableMultiRegionAccessPoints),
		UseArnRegion:                   aws.Bool(false),
	})
	if err != nil {
		return nil
	}
	region := opts.Region
	authOpts, _ := smithyauth.GetAuthOptions(&ep.Properties)
	if len(authOpts) > 0 {
		a := authOpts[0]
		// The rules name it "sigv4"; smithy's scheme ID is the long form.
		if a.SchemeID != "sigv4" && a.SchemeID != smithyauth.SchemeIDSigV4 {
			return nil
		}
		if name, ok := smithyhttp.GetSigV4SigningName(&a.SignerProperties); ok && name != "s3" {
			return nil
		}
		if r, ok := smithyhttp.GetSigV4SigningRegion(&a.SignerProperties); ok && r != "" {
			region = r
		}
	}
	creds := opts.Credentials
	if _, anon := creds.(aws.AnonymousCredentials); anon {
		creds = nil
	}
	g := &fastGet{
		hc: opts.HTTPClient, creds: creds, retryer: opts.Retryer, base: ep.URI, headers: ep.Headers, region: region,
		signer: v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }),
	}
	if g.base.RawPath == "" {
		g.base.RawPath = g.base.EscapedPath()
	}
	return g
}

// get is GetObject for in's key, range and If-Match; only the fields Read
// uses are set in the output. The caller closes the body.
func (g *fastGet) get(ctx context.Context, in *s3.GetObjectInput) (*s3.GetObjectOutput, error) {
	maxAttempts := g.retryer.MaxAttempts()
	release := g.retryer.GetInitialToken()
	for attempt := 1; ; attempt++ {
		out, err := g.attempt(ctx, in)
		_ = release(err)
		if err == nil {
			return out, nil
		}
		if ctx.Err() != nil || (maxAttempts > 0 && attempt >= maxAttempts) || !g.retryer.IsErrorRetryable(err) {
			return nil, err
		}
		var qerr error
		if release, qerr = g.retryer.GetRetryToken(ctx, err); qerr != nil {
			return nil, err // the retry quota is spent: fail now, as the SDK does
		}
		delay, derr := g.retryer.RetryDelay(attempt, err)
		if derr != nil {
			return nil, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// attempt sends one signed GET.
func (g *fastGet) attempt(ctx context.Context, in *s3.GetObjectInput) (*s3.GetObjectOutput, error) {
	req, err := g.request(ctx, in)
	if err != nil {
		return nil, err
	}
	resp, err := g.hc.Do(req)
	if err != nil {
		return nil, &smithyhttp.RequestSendError{Err: err}
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
		return nil, responseError(resp)
	}
	out := &s3.GetObjectOutput{
		Body:          resp.Body,
		ETag:          headerPtr(resp.Header, "ETag"),
		ContentRange:  headerPtr(resp.Header, "Content-Range"),
		ContentLength: aws.Int64(resp.ContentLength), // net/http's parse of Content-Length
	}
	if v := resp.Header.Get("Last-Modified"); v != "" {
		if t, perr := http.ParseTime(v); perr == nil {
			out.LastModified = aws.Time(t)
		}
	}
	return out, nil
}

// request builds and signs the GET of in.
func (g *fastGet) request(ctx context.Context, in *s3.GetObjectInput) (*http.Request, error) {
	key := aws.ToString(in.Key)
	u := g.base
	u.Path = smithyhttp.JoinPath(g.base.Path, key)
	u.RawPath = smithyhttp.JoinPath(g.base.RawPath, httpbinding.EscapePath(key, false))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "", nil)
	if err != nil {
		return nil, err
	}
	req.URL = &u
	req.Host = u.Host
	for k, v := range g.headers {
		req.Header[k] = v
	}
	// The transport would otherwise ask for gzip and unpack it, which
	// breaks Content-Length and ranges (the SDK's DisableGzip).
	req.Header.Set("Accept-Encoding", "identity")
	if in.Range != nil {
		req.Header.Set("Range", *in.Range)
	}
	if in.IfMatch != nil {
		req.Header.Set("If-Match", *in.IfMatch)
	}
	if g.creds == nil {
		return req, nil
	}
	creds, err := g.creds.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("s3store: retrieve credentials: %w", err)
	}
	req.Header.Set("X-Amz-Content-Sha256", emptyPayloadHash)
	if err := g.signer.SignHTTP(ctx, creds, req, emptyPayloadHash, "s3", g.region, time.Now()); err != nil {
		return nil, fmt.Errorf("s3store: sign GetObject: %w", err)
	}
	return req, nil
}

// getObject is GetObject through the fast GET where it applies.
func (s *Store) getObject(ctx context.Context, in *s3.GetObjectInput) (*s3.GetObjectOutput, error) {
	if s.fast != nil {
		return s.fast.get(ctx, in)
	}
	return s.c.s3.GetObject(ctx, in)
}

func headerPtr(h http.Header, name string) *string {
	if v := h.Get(name); v != "" {
		return aws.String(v)
	}
	return nil
}

// apiError is an S3 error response: smithy.APIError for classify, and
// HTTPStatusCode for the retryer and classify.
type apiError struct {
	status               int
	code, message, reqID string
}

func (e *apiError) Error() string {
	msg := fmt.Sprintf("api error %s: %s (HTTP %d", e.code, e.message, e.status)
	if e.reqID != "" {
		msg += ", request id " + e.reqID
	}
	return msg + ")"
}
func (e *apiError) ErrorCode() string    { return e.code }
func (e *apiError) ErrorMessage() string { return e.message }
func (e *apiError) HTTPStatusCode() int  { return e.status }

// ErrorFault is smithy.APIError's: a 5xx is the server's fault.
func (e *apiError) ErrorFault() smithy.ErrorFault {
	if e.status >= 500 {
		return smithy.FaultServer
	}
	return smithy.FaultClient
}

// responseError reads an error response's S3 code and message and closes
// its body. A response without an XML error (HEAD-like, or a proxy's)
// keeps its status text as the code.
func responseError(resp *http.Response) error {
	defer func() { _ = resp.Body.Close() }()
	e := &apiError{status: resp.StatusCode, code: http.StatusText(resp.StatusCode), reqID: resp.Header.Get("X-Amz-Request-Id")}
	var body struct {
		Code      string `xml:"Code"`
		Message   string `xml:"Message"`
		RequestID string `xml:"RequestId"`
	}
	if err := xml.NewDecoder(io.LimitReader(resp.Body, maxErrorBody)).Decode(&body); err == nil && body.Code != "" {
		e.code, e.message = body.Code, body.Message
		if body.RequestID != "" {
			e.reqID = body.RequestID
		}
	}
	if e.code == "" {
		e.code = strconv.Itoa(resp.StatusCode)
	}
	return e
}
