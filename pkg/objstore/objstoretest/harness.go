package objstoretest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Harness builds the stores the conformance suite runs against.
type Harness struct {
	// NewStore returns a store on a fresh, empty bucket. The harness closes
	// it (and may remove the bucket) at t.Cleanup.
	NewStore func(t *testing.T) objstore.Store
	// NewDeniedStore returns a store on the same server whose credentials
	// the server rejects. Nil when the backend has no access control.
	NewDeniedStore func(t *testing.T) objstore.Store
}

// RunConformance runs the whole suite as subtests of t. Every subtest gets
// its own store from h.NewStore.
func RunConformance(t *testing.T, h Harness) {
	t.Helper()
	if h.NewStore == nil {
		t.Fatal("objstoretest: Harness.NewStore is nil")
	}
	tests := []struct {
		name string
		run  func(t *testing.T, h Harness)
	}{
		{"RoundTrip", testRoundTrip},
		{"RangedRead", testRangedRead},
		{"EmptyObject", testEmptyObject},
		{"Keys", testKeys},
		{"Overwrite", testOverwrite},
		{"Missing", testMissing},
		{"Multipart", testMultipart},
		{"Stream", testStream},
		{"ListOrder", testListOrder},
		{"ListPagination", testListPagination},
		{"ListDelimiter", testListDelimiter},
		{"DirectoryMarker", testDirectoryMarker},
		{"Copy", testCopy},
		{"IfAbsent", testIfAbsent},
		{"Uploads", testUploads},
		{"Metadata", testMetadata},
		{"DeletePrefix", testDeletePrefix},
		{"AccessDenied", testAccessDenied},
		{"ConcurrentReaders", testConcurrentReaders},
		{"Cancel", testCancel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, h) })
	}
}

// patternBytes returns n deterministic pseudo-random bytes, different for
// every seed, so misplaced parts or ranges never compare equal by chance.
func patternBytes(seed uint64, n int) []byte {
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(seedOf(seed)).Read(b)
	return b
}

func seedOf(s uint64) [32]byte {
	var k [32]byte
	for i := range 8 {
		k[i] = byte(s >> (8 * i))
	}
	k[31] = 0xb5
	return k
}

// mustPut stores data under key and checks what Put returned.
func mustPut(t *testing.T, s objstore.Store, key string, data []byte) objstore.ObjectInfo {
	t.Helper()
	info, err := s.Put(t.Context(), key, bytes.NewReader(data), objstore.PutOptions{Size: int64(len(data))})
	if err != nil {
		t.Fatalf("Put(%q, %d bytes): %v", key, len(data), err)
	}
	if info.Key != key || info.Size != int64(len(data)) || info.Version == "" {
		t.Fatalf("Put(%q) returned %+v, want key %q, size %d and a version", key, info, key, len(data))
	}
	return info
}

// mustStat stats key and fails the test on error.
func mustStat(t *testing.T, s objstore.Store, key string) objstore.ObjectInfo {
	t.Helper()
	info, err := s.Stat(t.Context(), key)
	if err != nil {
		t.Fatalf("Stat(%q): %v", key, err)
	}
	if info.Key != key {
		t.Fatalf("Stat(%q).Key = %q", key, info.Key)
	}
	return info
}

// readRange reads one range completely.
func readRange(ctx context.Context, s objstore.Store, key string, opts objstore.ReadOptions) ([]byte, objstore.ObjectInfo, error) {
	rc, info, err := s.Read(ctx, key, opts)
	if err != nil {
		return nil, info, err
	}
	data, err := io.ReadAll(rc)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	return data, info, err
}

// mustRead reads a range and fails the test on error.
func mustRead(t *testing.T, s objstore.Store, key string, opts objstore.ReadOptions) ([]byte, objstore.ObjectInfo) {
	t.Helper()
	data, info, err := readRange(t.Context(), s, key, opts)
	if err != nil {
		t.Fatalf("Read(%q, %+v): %v", key, opts, err)
	}
	return data, info
}

// listAll collects every page of a listing; it checks each page's size
// bound and that items come in strictly increasing order across pages.
func listAll(t *testing.T, s objstore.Store, opts objstore.ListOptions) ([]objstore.ObjectInfo, []string) {
	t.Helper()
	limit := opts.MaxKeys
	if limit <= 0 {
		limit = 1000
	}
	var objects []objstore.ObjectInfo
	var prefixes []string
	last, seen := "", false
	pages := 0
	err := objstore.ListAll(t.Context(), s, opts, func(p objstore.ListPage) error {
		pages++
		if pages > 100000 {
			return errors.New("more than 100000 pages: the continuation token does not advance")
		}
		if n := len(p.Objects) + len(p.CommonPrefixes); n > limit {
			t.Errorf("List(%+v) page %d has %d items, MaxKeys %d", opts, pages, n, limit)
		}
		items := make([]string, 0, len(p.Objects)+len(p.CommonPrefixes))
		for _, o := range p.Objects {
			items = append(items, o.Key)
		}
		items = append(items, p.CommonPrefixes...)
		slices.Sort(items)
		for _, it := range items {
			if seen && it <= last {
				t.Errorf("List(%+v) page %d: %q does not come after %q", opts, pages, it, last)
			}
			last, seen = it, true
		}
		objects = append(objects, p.Objects...)
		prefixes = append(prefixes, p.CommonPrefixes...)
		return nil
	})
	if err != nil {
		t.Fatalf("List(%+v): %v", opts, err)
	}
	return objects, prefixes
}

func keysOf(objects []objstore.ObjectInfo) []string {
	keys := make([]string, len(objects))
	for i, o := range objects {
		keys[i] = o.Key
	}
	return keys
}

// wantErr fails unless err wraps target.
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error %v, want one wrapping %v", what, err, target)
	}
}
