package filestore_test

import (
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/filestore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// newStore opens a fresh temporary directory as a bucket.
func newStore(t *testing.T) *filestore.Store {
	t.Helper()
	s, err := filestore.New(objstore.Config{Backend: objstore.BackendFile, Bucket: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	objstoretest.RunConformance(t, objstoretest.Harness{
		NewStore: func(t *testing.T) objstore.Store { return newStore(t) },
		// A directory has no credentials; and tests run as root, which
		// file modes do not stop.
	})
}

func filestoreNew(dir string) (*filestore.Store, error) {
	return filestore.New(objstore.Config{Backend: objstore.BackendFile, Bucket: dir})
}
