package objstoretest

import (
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Keys lists every page of s under opts and returns the object keys and the
// common prefixes, failing t on an error.
func Keys(t testing.TB, s objstore.Store, opts objstore.ListOptions) (objects, prefixes []string) {
	t.Helper()
	err := objstore.ListAll(t.Context(), s, opts, func(p objstore.ListPage) error {
		for _, o := range p.Objects {
			objects = append(objects, o.Key)
		}
		prefixes = append(prefixes, p.CommonPrefixes...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return objects, prefixes
}
