package cacheusage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRoundTrip: what Write wrote, Read reads back, in a private file.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	at := time.Unix(1700000000, 123)
	want := Usage{VolumeID: "vol-1", UsedBytes: 5 << 20, Objects: 20, Capacity: 1 << 30, LastAccessNano: at.UnixNano()}
	if err := Write(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := Read(dir)
	if err != nil || got != want || !got.LastAccess().Equal(at) {
		t.Fatalf("Read = %+v, %v; want %+v", got, err, want)
	}
	st, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("usage file: %v, %v; want mode 0600", st, err)
	}
}

// TestWireFormat: the field names readers of earlier releases' files
// expect (a file written before an upgrade is read after it).
func TestWireFormat(t *testing.T) {
	dir := t.TempDir()
	old := `{"volumeID":"v","usedBytes":7,"objects":2,"capacity":9,"lastAccessUnixNano":0}`
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Read(dir)
	if want := (Usage{VolumeID: "v", UsedBytes: 7, Objects: 2, Capacity: 9}); err != nil || got != want || !got.LastAccess().IsZero() {
		t.Errorf("Read = %+v, %v; want %+v with no last access", got, err, want)
	}
}

func TestReadErrors(t *testing.T) {
	if _, err := Read(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no file: %v, want ErrNotExist", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("{torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	if u, err := Read(dir); err == nil {
		t.Errorf("torn file read as %+v", u)
	}
}
