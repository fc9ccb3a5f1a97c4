package nodestate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
)

func TestReopenRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "node.json")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	id := "s3/1pds/r/fp/bucket/vol/"
	err = s.Update(id, func(v Volume, ok bool) (Volume, bool, error) {
		if ok {
			t.Error("a new store has a record")
		}
		return Volume{StagingPath: "/staging", Context: map[string]string{"bucket": "b"}, AccessMode: "MULTI_NODE_MULTI_WRITER",
			MountFlags: []string{"noexec"}, MountGroup: "4243", MountRecorded: true}, true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(id, func(v Volume, ok bool) (Volume, bool, error) {
		if v.Targets == nil {
			v.Targets = map[string]Target{}
		}
		v.Targets["/pod/a"] = Target{ReadOnly: true}
		return v, ok, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := s2.Get(id)
	if !ok || v.ID != id || v.StagingPath != "/staging" || v.Context["bucket"] != "b" || !v.Targets["/pod/a"].ReadOnly ||
		len(v.MountFlags) != 1 || v.MountFlags[0] != "noexec" || v.MountGroup != "4243" || !v.MountRecorded {
		t.Errorf("reopened record = %+v, %v", v, ok)
	}
	// Deleting persists too; no temp file is left.
	if err := s2.Update(id, func(v Volume, ok bool) (Volume, bool, error) { return v, false, nil }); err != nil {
		t.Fatal(err)
	}
	s3, err := Open(path)
	if err != nil || len(s3.List()) != 0 {
		t.Errorf("after delete: %v, %v", s3.List(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range entries {
		if strings.Contains(e.Name(), "tmp") {
			t.Errorf("temp file left: %s", e.Name())
		}
	}
}

func TestUpdateErrorChangesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node.json")
	s, _ := Open(path)
	boom := errors.New("boom")
	if err := s.Update("v", func(Volume, bool) (Volume, bool, error) { return Volume{}, true, boom }); !errors.Is(err, boom) {
		t.Fatalf("Update: %v", err)
	}
	if _, ok := s.Get("v"); ok {
		t.Error("a failed update was applied")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a failed update wrote the file: %v", err)
	}
}

func TestGetReturnsCopies(t *testing.T) {
	s, _ := Open(filepath.Join(t.TempDir(), "node.json"))
	_ = s.Update("v", func(Volume, bool) (Volume, bool, error) {
		return Volume{Context: map[string]string{"k": "1"}}, true, nil
	})
	v, _ := s.Get("v")
	v.Context["k"] = "changed"
	if w, _ := s.Get("v"); w.Context["k"] != "1" {
		t.Error("Get exposed the store's map")
	}
}

// firstRelease is a state file as the first release wrote it: its records
// have no mount flags or group, nor say that they have none.
const firstRelease = `{
  "version": 1,
  "volumes": {
    "s3/1pds/r/fp/bucket/vol/": {
      "id": "s3/1pds/r/fp/bucket/vol/",
      "stagingPath": "/staging",
      "context": {"backend": "s3", "bucket": "bucket"},
      "accessMode": "MULTI_NODE_MULTI_WRITER",
      "targets": {"/pod/a": {"accessMode": "MULTI_NODE_MULTI_WRITER"}}
    }
  }
}`

// TestOpenFirstRelease: a record of the first release loads as one whose
// mount flags and group were not recorded, and the file stays readable by
// that release (same version) after this one rewrites it.
func TestOpenFirstRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node.json")
	if err := os.WriteFile(path, []byte(firstRelease), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	id := "s3/1pds/r/fp/bucket/vol/"
	v, ok := s.Get(id)
	if !ok || v.StagingPath != "/staging" || v.Context["bucket"] != "bucket" || len(v.Targets) != 1 ||
		v.MountRecorded || v.MountFlags != nil || v.MountGroup != "" {
		t.Errorf("record of the first release = %+v, %v", v, ok)
	}
	if err := s.Update("new", func(Volume, bool) (Volume, bool, error) {
		return Volume{StagingPath: "/staging2", MountGroup: "4243", MountRecorded: true}, true, nil
	}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ Version int }
	if err := json.Unmarshal(b, &f); err != nil || f.Version != 1 {
		t.Errorf("rewritten file version %d (%v); want 1, which the first release reads", f.Version, err)
	}
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s2.Get(id); v.MountRecorded {
		t.Error("rewriting the file marked the first release's record as recorded")
	}
	if v, _ := s2.Get("new"); !v.MountRecorded || v.MountGroup != "4243" {
		t.Errorf("new record after reopen = %+v", v)
	}
}

func TestOpenCorrupt(t *testing.T) {
	for _, body := range []string{"{", `{"version":99,"volumes":{}}`, `{"version":1,"volumes":{"a":{"id":"b"}}}`} {
		path := filepath.Join(t.TempDir(), "node.json")
		_ = os.WriteFile(path, []byte(body), 0o600)
		if _, err := Open(path); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Open(%q) = %v, want ErrCorrupt", body, err)
		}
	}
}

func TestCredentials(t *testing.T) {
	s, _ := Open(filepath.Join(t.TempDir(), "node.json"))
	id := "gcs/1bd/x/y/bucket/"
	if c, err := s.LoadCredentials(id); err != nil || !c.IsZero() {
		t.Errorf("none saved: %v, %v", c, err)
	}
	want := objstore.Credentials{AccessKeyID: "AKID", SecretAccessKey: "sekret"}
	if err := s.SaveCredentials(id, want); err != nil {
		t.Fatal(err)
	}
	path := s.credentialsPath(id)
	if st, err := os.Stat(path); err != nil || st.Mode() != 0o600 {
		t.Errorf("credentials file mode %v, %v", st.Mode(), err)
	}
	if st, _ := os.Stat(filepath.Dir(path)); st.Mode() != os.ModeDir|0o700 {
		t.Errorf("credentials dir mode %v", st.Mode())
	}
	state, _ := os.ReadFile(s.path)
	if strings.Contains(string(state), "sekret") {
		t.Error("a secret is in the state file")
	}
	got, err := s.LoadCredentials(id)
	if err != nil || got.SecretAccessKey != "sekret" || got.AccessKeyID != "AKID" {
		t.Errorf("LoadCredentials = %v, %v", got, err)
	}
	if err := s.DeleteCredentials(id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("credentials survived delete: %v", err)
	}
}
