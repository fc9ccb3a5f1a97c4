package s3store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
)

// pattern returns n bytes that differ at every offset modulo 251.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

func put(t *testing.T, s *Store, key string, data []byte) objstore.ObjectInfo {
	t.Helper()
	oi, err := s.Put(t.Context(), key, bytes.NewReader(data), objstore.PutOptions{Size: int64(len(data)), ContentType: "text/x-basin"})
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	return oi
}

// TestDeletePrefixBatches: DeletePrefix walks several DeleteObjects batches.
func TestDeletePrefixBatches(t *testing.T) {
	s := newMinIOStore(t, objstore.BackendS3, asConfigured, nil)
	s.deleteBatch = 7
	for i := range 30 {
		put(t, s, fmt.Sprintf("p/%02d", i), []byte{byte(i)})
	}
	// Not "p": MinIO hides "p/..." from listings while an object "p"
	// exists (it cannot hold an object and a prefix of the same name).
	for _, k := range []string{"o", "q/0", "pp"} {
		put(t, s, k, nil)
	}
	n, err := s.DeletePrefix(t.Context(), "p/")
	if err != nil || n != 30 {
		t.Fatalf("DeletePrefix = %d, %v; want 30", n, err)
	}
	page, err := s.List(t.Context(), objstore.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range page.Objects {
		keys = append(keys, o.Key)
	}
	if strings.Join(keys, ",") != "o,pp,q/0" {
		t.Errorf("left %q, want o, pp, q/0", keys)
	}
}

// TestMultipartCopy: sources above the threshold are copied part by part,
// with their content type.
func TestMultipartCopy(t *testing.T) {
	s := newMinIOStore(t, objstore.BackendS3, asConfigured, nil)
	s.copyThreshold = 5 << 20
	s.copyPart = 5 << 20
	data := pattern(12<<20 + 3)
	src := put(t, s, "src/big ü+", data)

	got, err := s.Copy(t.Context(), "src/big ü+", "dst/big ✓")
	if err != nil {
		t.Fatal(err)
	}
	if got.Size != src.Size || got.Key != "dst/big ✓" || !strings.HasSuffix(got.Version, "-3") {
		t.Errorf("Copy = %+v, want size %d and a 3-part version", got, src.Size)
	}
	head, err := s.headObject(t.Context(), "dst/big ✓", got.Version)
	if err != nil {
		t.Fatal(err)
	}
	if ct := aws.ToString(head.ContentType); ct != "text/x-basin" {
		t.Errorf("content type %q not carried over", ct)
	}
	back, _, err := readAll(t, s, "dst/big ✓", objstore.ReadOptions{Length: -1})
	if err != nil || !bytes.Equal(back, data) {
		t.Errorf("copy reads back %d bytes (%v), want the %d put", len(back), err, len(data))
	}

	// Copying onto itself keeps the object.
	self, err := s.Copy(t.Context(), "src/big ü+", "src/big ü+")
	if err != nil || self.Version != src.Version {
		t.Errorf("Copy onto itself = %+v, %v; want version %q", self, err, src.Version)
	}
}

// TestPutSizeMismatch: a body that does not match PutOptions.Size stores
// nothing, on both the single and the multipart path.
func TestPutSizeMismatch(t *testing.T) {
	s := newMinIOStore(t, objstore.BackendS3, asConfigured, nil)
	cases := []struct {
		name       string
		size, body int
	}{
		{"single short", 10, 5},
		{"single long", 5, 10},
		{"multipart short", 7 << 20, 6 << 20},
		{"multipart long", 6 << 20, 7 << 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := strings.ReplaceAll(c.name, " ", "-")
			_, err := s.Put(t.Context(), key, bytes.NewReader(pattern(c.body)), objstore.PutOptions{Size: int64(c.size)})
			if !errors.Is(err, errSizeMismatch) {
				t.Errorf("Put: %v, want errSizeMismatch", err)
			}
			if _, err := s.Stat(t.Context(), key); !errors.Is(err, objstore.ErrNotFound) {
				t.Errorf("Stat after a failed Put: %v, want ErrNotFound", err)
			}
		})
	}
}

func TestUploadPartSize(t *testing.T) {
	cases := []struct{ part, size, want int64 }{
		{8 << 20, 100 << 20, 8 << 20},
		{1 << 20, 100 << 20, 5 << 20}, // raised to S3's minimum
		{8 << 20, -1, 8 << 20},
		{8 << 20, 100 << 30, (100<<30 + 9999) / 10000}, // 100 GiB: 10,000 parts of ~10.5 MiB
	}
	for _, c := range cases {
		got := uploadPartSize(c.part, c.size)
		if got != c.want || (c.size > 0 && (c.size+got-1)/got > maxParts) {
			t.Errorf("uploadPartSize(%d, %d) = %d, want %d", c.part, c.size, got, c.want)
		}
	}
}

// TestExactReader: the body guard counts and enforces PutOptions.Size.
func TestExactReader(t *testing.T) {
	cases := []struct {
		name   string
		left   int64
		body   string
		want   string
		errIs  error
		readOK bool
	}{
		{"exact", 3, "abc", "abc", nil, true},
		{"unknown", -1, "abcdef", "abcdef", nil, true},
		{"empty", 0, "", "", nil, true},
		{"short", 4, "abc", "abc", errSizeMismatch, false},
		{"long", 2, "abc", "ab", errSizeMismatch, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &exactReader{r: strings.NewReader(c.body), left: c.left}
			got, err := io.ReadAll(r)
			if string(got) != c.want || (err == nil) != c.readOK || (c.errIs != nil && !errors.Is(err, c.errIs)) {
				t.Errorf("ReadAll = %q, %v; want %q, error %v", got, err, c.want, c.errIs)
			}
			if r.n != int64(len(got)) {
				t.Errorf("counted %d, read %d", r.n, len(got))
			}
		})
	}
}

// TestAdmin walks a bucket's life through Admin.
func TestAdmin(t *testing.T) {
	srv := testserver.MinIO(t)
	admin, err := NewAdmin(t.Context(), minioConfig(srv, objstore.BackendS3, ""), minioCreds(srv))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Close() }()
	ctx := t.Context()
	bucket := "basin-admin-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	exists := func(want bool) {
		t.Helper()
		got, err := admin.BucketExists(ctx, bucket)
		if err != nil || got != want {
			t.Fatalf("BucketExists = %v, %v; want %v", got, err, want)
		}
	}
	exists(false)
	if err := admin.CreateBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	exists(true)
	if err := admin.CreateBucket(ctx, bucket); err != nil {
		t.Errorf("CreateBucket of an owned bucket: %v", err)
	}
	s, err := New(ctx, minioConfig(srv, objstore.BackendS3, bucket), minioCreds(srv))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	put(t, s, "k", []byte("x"))
	if err := admin.DeleteBucket(ctx, bucket); !errors.Is(err, objstore.ErrBucketNotEmpty) {
		t.Errorf("DeleteBucket of a full bucket: %v, want ErrBucketNotEmpty", err)
	}
	if _, err := s.DeletePrefix(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if err := admin.DeleteBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	exists(false)
	if err := admin.DeleteBucket(ctx, bucket); err != nil {
		t.Errorf("DeleteBucket of a missing bucket: %v", err)
	}
	// A store on a missing bucket reports ErrNotFound, and Delete says so
	// too (only a missing key is not an error).
	if _, err := s.Stat(ctx, "k"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Stat in a missing bucket: %v", err)
	}
	if err := s.Delete(ctx, "k"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Delete in a missing bucket: %v, want ErrNotFound", err)
	}
	if err := admin.CreateBucket(ctx, ""); !errors.Is(err, objstore.ErrInvalidConfig) {
		t.Errorf("CreateBucket(\"\"): %v", err)
	}
}

// TestDeleteKeysBatches: objstore.DeleteKeys reaches the store's
// DeleteObjects through a WithPrefix view, in batches, and removes exactly
// the keys given (a missing one counts as removed).
func TestDeleteKeysBatches(t *testing.T) {
	s := newMinIOStore(t, objstore.BackendS3, asConfigured, nil)
	s.deleteBatch = 7
	var gone []string
	for i := range 20 {
		put(t, s, fmt.Sprintf("v/%02d", i), []byte{byte(i)})
		if i%2 == 0 {
			gone = append(gone, fmt.Sprintf("%02d", i))
		}
	}
	gone = append(gone, "missing")
	view := objstore.WithPrefix(nopClose{s}, "v")
	n, err := objstore.DeleteKeys(t.Context(), view, gone, 1)
	if err != nil || n != len(gone) {
		t.Fatalf("DeleteKeys = %d, %v; want %d", n, err, len(gone))
	}
	page, err := s.List(t.Context(), objstore.ListOptions{Prefix: "v/"})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range page.Objects {
		keys = append(keys, o.Key)
	}
	if want := "v/01,v/03,v/05,v/07,v/09,v/11,v/13,v/15,v/17,v/19"; strings.Join(keys, ",") != want {
		t.Errorf("left %q, want %s", keys, want)
	}
}

// nopClose keeps a view's Close from closing the test's store.
type nopClose struct{ *Store }

func (nopClose) Close() error { return nil }
