package direct

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/scenario"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/backend"
)

// Command is the basin-bench subcommand that runs Serve.
const Command = "direct-client"

// Op names a workload.
type Op string

// The workloads a Request may ask for.
const (
	OpGet      Op = "get"      // Get(Keys, Threads)
	OpDownload Op = "download" // Download(Objects, Part, Threads)
	OpRanges   Op = "ranges"   // Ranges(Objects, Ranges, Size, Threads)
	OpPut      Op = "put"      // Put(Set, Keys, Content)
	OpVerify   Op = "verify"   // Verify(Set, Keys, Content)
)

// Request is one workload, a JSON line on the client's stdin.
type Request struct {
	Op      Op          `json:"op"`
	Keys    []string    `json:"keys,omitempty"`
	Content []string    `json:"content,omitempty"`
	Objects []Object    `json:"objects,omitempty"`
	Ranges  []Range     `json:"ranges,omitempty"`
	Size    int64       `json:"size,omitempty"`
	Part    int64       `json:"part,omitempty"`
	Threads int         `json:"threads,omitempty"`
	Set     dataset.Set `json:"set"`
	// Deadline stops the workload; its measure is then partial.
	Deadline time.Time `json:"deadline"`
}

// Answer is a Request's outcome, a JSON line on the client's stdout.
type Answer struct {
	Measure scenario.Measure `json:"measure"`
	Err     string           `json:"err,omitempty"`
}

// Config is how the client reaches the bucket. The credentials come from
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, never from argv.
type Config struct {
	Endpoint, Bucket, Region string
	// UploadConcurrency is the parts of one multipart upload in flight.
	UploadConcurrency int
}

// Args are the command-line flags of c, after Command.
func (c Config) Args() []string {
	return []string{"-endpoint", c.Endpoint, "-bucket", c.Bucket, "-region", c.Region,
		"-upload-concurrency", fmt.Sprint(c.UploadConcurrency)}
}

// Main is the subcommand: it parses Config's flags, opens the bucket and
// serves requests from in until it ends.
func Main(ctx context.Context, args []string, in io.Reader, out io.Writer) error {
	var c Config
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	fs.StringVar(&c.Endpoint, "endpoint", "", "S3 endpoint (the WAN emulator's URL)")
	fs.StringVar(&c.Bucket, "bucket", "", "bucket")
	fs.StringVar(&c.Region, "region", "us-east-1", "region")
	fs.IntVar(&c.UploadConcurrency, "upload-concurrency", 16, "parts of one multipart upload in flight")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.Endpoint == "" || c.Bucket == "" || c.UploadConcurrency <= 0 {
		return errors.New("direct-client: -endpoint, -bucket and a positive -upload-concurrency are required")
	}
	store, err := backend.Open(ctx, objstore.Config{Backend: objstore.BackendS3, Bucket: c.Bucket, Endpoint: c.Endpoint,
		Region: c.Region, PathStyle: true, UploadConcurrency: c.UploadConcurrency},
		objstore.Credentials{AccessKeyID: os.Getenv("AWS_ACCESS_KEY_ID"), SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY")})
	if err != nil {
		return err
	}
	defer func() { _ = store.Close() }()
	return Serve(ctx, store, in, out)
}

// Serve answers the requests read from in, one at a time, until in ends.
func Serve(ctx context.Context, store objstore.Store, in io.Reader, out io.Writer) error {
	dec := json.NewDecoder(bufio.NewReader(in))
	enc := json.NewEncoder(out)
	for {
		var req Request
		if err := dec.Decode(&req); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("direct-client: read request: %w", err)
		}
		m, err := Do(ctx, store, req)
		a := Answer{Measure: m}
		if err != nil {
			a.Err = err.Error()
		}
		if err := enc.Encode(a); err != nil {
			return err
		}
	}
}

// Do runs one request's workload on store, stopped at its deadline.
func Do(ctx context.Context, store objstore.Store, req Request) (scenario.Measure, error) {
	if !req.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, req.Deadline)
		defer cancel()
	}
	if (req.Op == OpGet || req.Op == OpRanges || req.Op == OpDownload) && req.Threads <= 0 ||
		req.Op == OpDownload && req.Part <= 0 || req.Op == OpRanges && req.Size <= 0 {
		return scenario.Measure{}, fmt.Errorf("direct-client: %s: threads, part and size must be positive", req.Op)
	}
	switch req.Op {
	case OpGet:
		return Get(ctx, store, req.Keys, req.Threads)
	case OpDownload:
		return Download(ctx, store, req.Objects, req.Part, req.Threads, nil)
	case OpRanges:
		return Ranges(ctx, store, req.Objects, req.Ranges, req.Size, req.Threads)
	case OpPut:
		return Put(ctx, store, req.Set, req.Keys, req.Content)
	case OpVerify:
		return scenario.Measure{}, Verify(ctx, store, req.Set, req.Keys, req.Content)
	}
	return scenario.Measure{}, fmt.Errorf("direct-client: unknown op %q (accepted: get, download, ranges, put, verify)", req.Op)
}
