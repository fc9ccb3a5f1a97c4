package objstore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// TestDeleteKeysOneByOne: on a store without batch deletes, DeleteKeys
// deletes each key of a view with Delete (a missing one counts as
// removed), leaves the others, and reports failures with the store's
// sentinel.
func TestDeleteKeysOneByOne(t *testing.T) {
	f := objstoretest.NewFake()
	for _, k := range []string{"v/a", "v/b", "v/c", "v/d", "w/a"} {
		if _, err := f.Put(t.Context(), k, strings.NewReader(k), objstore.PutOptions{Size: int64(len(k))}); err != nil {
			t.Fatal(err)
		}
	}
	view := objstore.WithPrefix(f, "v")
	n, err := objstore.DeleteKeys(t.Context(), view, []string{"a", "c", "missing"}, 2)
	if err != nil || n != 3 {
		t.Fatalf("DeleteKeys = %d, %v; want 3", n, err)
	}
	if got := strings.Join(f.Keys(), ","); got != "v/b,v/d,w/a" {
		t.Errorf("left %s, want v/b,v/d,w/a", got)
	}
	if c := f.Calls(objstoretest.OpDelete); c != 3 {
		t.Errorf("%d Delete calls, want 3", c)
	}
	f.SetError(objstoretest.OpDelete, objstore.ErrAccessDenied)
	n, err = objstore.DeleteKeys(t.Context(), view, []string{"b", "d"}, 4)
	if n != 0 || !errors.Is(err, objstore.ErrAccessDenied) {
		t.Errorf("DeleteKeys refused = %d, %v; want 0, ErrAccessDenied", n, err)
	}
	if n, err := objstore.DeleteKeys(t.Context(), view, nil, 1); n != 0 || err != nil {
		t.Errorf("DeleteKeys of nothing = %d, %v", n, err)
	}
}
