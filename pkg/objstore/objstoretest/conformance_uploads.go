package objstoretest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

// testUploads: a store with incomplete uploads (objstore.Uploads) lists a
// stream that was started and never completed, under its key and within
// the prefix asked for, also through a WithPrefix view; AbortUpload
// removes it, and aborting it again is not an error. Stores without
// such uploads skip.
func testUploads(t *testing.T, h Harness) {
	s := h.NewStore(t)
	ups, ok := objstore.UploadsOf(s)
	if !ok {
		t.Skip("the store keeps no incomplete uploads")
	}
	const partSize = 5 << 20
	data := patternBytes(13, 2*partSize)
	started := time.Now()
	// A stream whose process "died": started, one part sent, never
	// completed nor aborted. Its context outlives the test's subtests.
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	t.Cleanup(cancel)
	st, err := s.StartStream(ctx, "vol/dir/big", bytes.NewReader(data), objstore.StreamOptions{PartSize: partSize, Concurrency: 1})
	if err != nil {
		t.Fatalf("StartStream: %v", err)
	}
	st.Extend(int64(len(data)))
	waitSent(t, st, partSize)

	list := func(u objstore.Uploads, prefix string) []objstore.Upload {
		t.Helper()
		got, err := u.ListUploads(t.Context(), prefix)
		if err != nil {
			t.Fatalf("ListUploads(%q): %v", prefix, err)
		}
		return got
	}
	got := list(ups, "vol/")
	if len(got) != 1 || got[0].Key != "vol/dir/big" || got[0].ID == "" {
		t.Fatalf("ListUploads(vol/) = %+v, want the one upload of vol/dir/big", got)
	}
	if d := got[0].Initiated.Sub(started); d < -time.Minute || d > time.Minute {
		t.Errorf("Initiated = %v, the upload began at %v", got[0].Initiated, started)
	}
	for _, p := range []string{"", "vol/dir/", "vol/dir/big"} {
		if got := list(ups, p); len(got) != 1 {
			t.Errorf("ListUploads(%q) = %+v, want the one upload", p, got)
		}
	}
	for _, p := range []string{"other/", "vol/dir/big/", "vol/dir/bigger"} {
		if got := list(ups, p); len(got) != 0 {
			t.Errorf("ListUploads(%q) = %+v, want none", p, got)
		}
	}
	view, ok := objstore.UploadsOf(objstore.WithPrefix(s, "vol"))
	if !ok {
		t.Fatal("UploadsOf a WithPrefix view: false")
	}
	inView := list(view, "")
	if len(inView) != 1 || inView[0].Key != "dir/big" || inView[0].ID != got[0].ID {
		t.Fatalf("through WithPrefix(vol): %+v, want dir/big", inView)
	}
	if err := view.AbortUpload(t.Context(), inView[0]); err != nil {
		t.Fatalf("AbortUpload: %v", err)
	}
	if left := list(ups, ""); len(left) != 0 {
		t.Errorf("after AbortUpload: %+v, want none", left)
	}
	if err := ups.AbortUpload(t.Context(), got[0]); err != nil {
		t.Errorf("AbortUpload of an aborted upload: %v", err)
	}
	if _, err := s.Stat(t.Context(), "vol/dir/big"); err == nil {
		t.Error("an aborted upload created its object")
	}
}
