package objstoretest

import (
	"bytes"
	"errors"
	"maps"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
)

// testMetadata: user metadata put with an object comes back from Stat, a
// listing never claims "none" when it did not ask (nil or the right map),
// a copy keeps it, SetMetadata replaces it whole without changing the
// content (also for a streamed upload), and SetMetadata pinned to an old
// version fails with ErrPreconditionFailed.
func testMetadata(t *testing.T, h Harness) {
	s := h.NewStore(t)
	setter, ok := s.(objstore.MetadataSetter)
	if !ok {
		t.Fatalf("%T does not implement objstore.MetadataSetter", s)
	}
	ctx := t.Context()
	data := patternBytes(41, 3000)
	meta := map[string]string{"mode": "33261", "mtime": "1577836800.5", "gcsfuse_mtime": "2020-01-01T00:00:00.5Z"}
	put, err := s.Put(ctx, "m/a", bytes.NewReader(data), objstore.PutOptions{Size: int64(len(data)), Metadata: meta})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Stat(ctx, "m/a")
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(st.Metadata, meta) {
		t.Errorf("Stat metadata %v, want %v", st.Metadata, meta)
	}
	mustPut(t, s, "m/plain", []byte("x"))
	if st, err := s.Stat(ctx, "m/plain"); err != nil || st.Metadata == nil || len(st.Metadata) != 0 {
		t.Errorf("Stat of an object without metadata: %v %v, want an empty map", st.Metadata, err)
	}
	page, err := s.List(ctx, objstore.ListOptions{Prefix: "m/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range page.Objects {
		if o.Key == "m/a" && o.Metadata != nil && !maps.Equal(o.Metadata, meta) {
			t.Errorf("listed metadata %v, want %v or nil (not known)", o.Metadata, meta)
		}
	}
	if _, err := s.Copy(ctx, "m/a", "m/copy"); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Stat(ctx, "m/copy"); err != nil || !maps.Equal(st.Metadata, meta) {
		t.Errorf("copy's metadata %v %v, want %v", st.Metadata, err, meta)
	}

	next := map[string]string{"mode": "33188", "uid": "1000"}
	after, err := setter.SetMetadata(ctx, "m/a", next, put.Version)
	if err != nil {
		t.Fatalf("SetMetadata: %v", err)
	}
	if after.Size != int64(len(data)) || !maps.Equal(after.Metadata, next) {
		t.Errorf("SetMetadata returned size %d metadata %v, want %d and %v", after.Size, after.Metadata, len(data), next)
	}
	if st, err := s.Stat(ctx, "m/a"); err != nil || !maps.Equal(st.Metadata, next) || st.Version != after.Version {
		t.Errorf("Stat after SetMetadata: %+v %v, want metadata %v and version %s", st, err, next, after.Version)
	}
	if got, _ := mustRead(t, s, "m/a", objstore.ReadOptions{Length: -1}); !bytes.Equal(got, data) {
		t.Errorf("content changed by SetMetadata: %d bytes", len(got))
	}
	if after.Version != put.Version {
		// The version moved (a multipart copy, a rewrite): the old one
		// no longer matches.
		if _, err := setter.SetMetadata(ctx, "m/a", meta, put.Version); !errors.Is(err, objstore.ErrPreconditionFailed) {
			t.Errorf("SetMetadata on a stale version: %v, want ErrPreconditionFailed", err)
		}
	}
	mustPut(t, s, "m/a", []byte("new content"))
	if _, err := setter.SetMetadata(ctx, "m/a", meta, after.Version); !errors.Is(err, objstore.ErrPreconditionFailed) {
		t.Errorf("SetMetadata after an overwrite: %v, want ErrPreconditionFailed", err)
	}
	if st, err := s.Stat(ctx, "m/a"); err != nil || len(st.Metadata) != 0 {
		t.Errorf("an overwrite without metadata left %v %v", st.Metadata, err)
	}
	if _, err := setter.SetMetadata(ctx, "m/missing", meta, ""); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("SetMetadata of a missing key: %v, want ErrNotFound", err)
	}

	// A streamed upload carries its metadata too.
	stream, err := s.StartStream(ctx, "m/streamed", bytes.NewReader(data), objstore.StreamOptions{Metadata: meta})
	if err != nil {
		t.Fatal(err)
	}
	stream.Extend(int64(len(data)))
	if _, err := stream.Complete(ctx, int64(len(data))); err != nil {
		stream.Abort()
		t.Fatal(err)
	}
	if st, err := s.Stat(ctx, "m/streamed"); err != nil || !maps.Equal(st.Metadata, meta) {
		t.Errorf("streamed object's metadata %v %v, want %v", st.Metadata, err, meta)
	}
}
