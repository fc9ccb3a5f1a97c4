package direct

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"testing"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/servers"
	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserver.Shutdown()
	os.Exit(code)
}

// client runs Main, as the direct system's child process does, on pipes.
type client struct {
	t   *testing.T
	enc *json.Encoder
	dec *json.Decoder
}

func startClient(t *testing.T, srv *testserver.Server, bucket string) *client {
	t.Helper()
	store, err := servers.OpenBucket(t.Context(), objstore.Config{Backend: objstore.BackendS3, Bucket: bucket,
		Endpoint: srv.Endpoint, Region: srv.Region, PathStyle: true},
		objstore.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	_ = store.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := Main(context.Background(), Config{Endpoint: srv.Endpoint, Bucket: bucket, Region: srv.Region, UploadConcurrency: 4}.Args(), inR, outW)
		_ = outW.CloseWithError(err)
		done <- err
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		if err := <-done; err != nil {
			t.Errorf("Main: %v", err)
		}
	})
	return &client{t: t, enc: json.NewEncoder(inW), dec: json.NewDecoder(outR)}
}

func (c *client) do(req Request) Answer {
	c.t.Helper()
	if err := c.enc.Encode(req); err != nil {
		c.t.Fatal(err)
	}
	var a Answer
	if err := c.dec.Decode(&a); err != nil {
		c.t.Fatal(err)
	}
	return a
}

// TestWorkloads plays every workload against a real MinIO through the
// client's request protocol: objects put (one large enough for a
// multipart upload) come back byte for byte by GET, ranged download and
// ranged GETs, and bad requests are refused with an error.
func TestWorkloads(t *testing.T) {
	c := startClient(t, testserver.NewMinIO(t), "direct-test")
	small := dataset.Small(6, 70_000, 2)
	big := dataset.Checkpoint(1, 10<<20+123) // above the 8 MiB part size: multipart
	for _, set := range []dataset.Set{small, big} {
		a := c.do(Request{Op: OpPut, Set: set, Keys: set.Keys()})
		if a.Err != "" || a.Measure.Files != int64(set.Files) || a.Measure.Bytes != set.TotalBytes() {
			t.Fatalf("put %s: %+v", set.Name, a)
		}
		if a := c.do(Request{Op: OpVerify, Set: set, Keys: set.Keys()}); a.Err != "" {
			t.Fatalf("verify %s: %s", set.Name, a.Err)
		}
	}
	if a := c.do(Request{Op: OpGet, Keys: small.Keys(), Threads: 4}); a.Err != "" || a.Measure.Bytes != small.TotalBytes() || a.Measure.Files != 6 {
		t.Errorf("get: %+v", a)
	}
	objs := []Object{{Key: big.Key(0), Size: big.FileSize}}
	for _, width := range []int{1, 3} {
		if a := c.do(Request{Op: OpDownload, Objects: objs, Part: 1 << 20, Threads: width}); a.Err != "" || a.Measure.Bytes != big.FileSize {
			t.Errorf("download, width %d: %+v", width, a)
		}
	}
	ranges := []Range{{Object: 0, Off: 0}, {Object: 0, Off: big.FileSize - 100}, {Object: 0, Off: 4 << 20}}
	if a := c.do(Request{Op: OpRanges, Objects: objs, Ranges: ranges, Size: 1 << 20, Threads: 2}); a.Err != "" || a.Measure.Bytes != 2<<20+100 || a.Measure.Files != 3 {
		t.Errorf("ranges: %+v", a)
	}
	// A copy under another key holds the content of the key it came from.
	copyKeys, content := []string{"copy/a", "copy/b"}, small.Keys()[:2]
	if a := c.do(Request{Op: OpPut, Set: small, Keys: copyKeys, Content: content}); a.Err != "" {
		t.Fatalf("put copies: %s", a.Err)
	}
	if a := c.do(Request{Op: OpVerify, Set: small, Keys: copyKeys, Content: content}); a.Err != "" {
		t.Errorf("verify copies: %s", a.Err)
	}
	for name, req := range map[string]Request{
		"wrong content":  {Op: OpVerify, Set: small, Keys: copyKeys[:1], Content: content[1:]},
		"missing object": {Op: OpGet, Keys: []string{"nowhere"}, Threads: 1},
		"unknown op":     {Op: "list"},
		"no threads":     {Op: OpGet, Keys: small.Keys()},
		"no part":        {Op: OpDownload, Objects: objs, Threads: 2},
		"content count":  {Op: OpPut, Set: small, Keys: copyKeys, Content: content[:1]},
	} {
		if a := c.do(req); a.Err == "" {
			t.Errorf("%s: no error (%+v)", name, a.Measure)
		}
	}
}
