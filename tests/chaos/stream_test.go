package chaos

import (
	"context"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestStreamedWriteKilled: a checkpoint large enough to go up while it is
// written (40 MiB: past two 8 MiB parts) replaces an object, and the FUSE
// process is killed after 30 MiB, with parts of a multipart upload in the
// bucket. The bucket must still hold the old version (an upload is only
// visible once completed); the dead process's upload must be gone once
// the successor serves (it aborts them before serving: no parts left
// billed); the writer, carried on by the successor process, must end
// with success, and the bucket then holds the whole new content (the
// successor uploads the adopted staged file at close) and no incomplete
// upload at all.
func TestStreamedWriteKilled(t *testing.T) {
	const size = 40 << 20
	key := "ckpt/streamed.pt"
	old := content(4242, size)
	r := newWritableRig(t, map[string][]byte{key: old}, "1Gi")
	for i, mode := range []string{modeTrunc, modeCreate} {
		if mode == modeCreate {
			key = "ckpt/streamed-new.pt"
		}
		seed := uint64(5000 + i)
		w := startWriter(t, writerSpec{Path: filepath.Join(r.staging, key), Mode: mode, Seed: seed, Size: size, Chunk: 1 << 20, HoldAt: 30, Hold: 3000})
		if l := w.until(t, "w 30"); l != "w 30" {
			t.Fatalf("%s: writer said %q", mode, l)
		}
		dead := r.incompleteUploads(t, key)
		if len(dead) == 0 {
			t.Errorf("%s: no multipart upload under way after 30 of 40 MiB: the file was not streamed", mode)
		}
		pid := r.pid(t)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		want := sum(nil) // O_EXCL claimed the name at open: an empty object
		if mode != modeCreate {
			want = sum(old)
		}
		if got := r.objectSum(t, key); got != want {
			t.Errorf("%s: killed while streaming, the bucket holds %s, not the version before the write %s", mode, short(got), short(want))
		}
		if ev := r.waitServing(t, pid); ev.Method != "takeover" || ev.Err != "" {
			t.Fatalf("%s: heal %+v, want a takeover", mode, ev)
		}
		for _, id := range r.incompleteUploads(t, key) {
			if slices.Contains(dead, id) {
				t.Errorf("%s: the killed process's upload %s is still in the bucket once the successor serves", mode, id)
			}
		}
		if l := w.until(t, "ok"); l != "ok" {
			t.Fatalf("%s: the writer failed across the takeover: %q", mode, l)
		}
		if got, want := r.objectSum(t, key), sum(content(seed, size)); got != want {
			t.Errorf("%s: close succeeded but the bucket holds %s, not the new content %s", mode, short(got), short(want))
		}
		if left := r.incompleteUploads(t, ""); len(left) > 0 {
			t.Errorf("%s: %d incomplete uploads in the bucket after the close: %v", mode, len(left), left)
		}
	}
}

// incompleteUploads returns the ids of the multipart uploads under key
// begun and neither completed nor aborted.
func (b bucket) incompleteUploads(t *testing.T, key string) []string {
	t.Helper()
	c := s3.New(s3.Options{
		Region:       b.srv.Region,
		BaseEndpoint: aws.String(b.srv.Endpoint),
		UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: b.creds.AccessKeyID, SecretAccessKey: b.creds.SecretAccessKey}, nil
		}),
	})
	out, err := c.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: aws.String(b.name), Prefix: aws.String(key)})
	if err != nil {
		t.Fatalf("list multipart uploads: %v", err)
	}
	var ids []string
	for _, u := range out.Uploads {
		ids = append(ids, aws.ToString(u.UploadId))
	}
	return ids
}
