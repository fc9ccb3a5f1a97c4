package main

import (
	"os"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
)

func TestCredentialsFileHandoff(t *testing.T) {
	dir := t.TempDir() + "/creds"
	want := objstore.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret-value"}
	path, err := writeCredentialsFile(dir, want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readCredentialsFile(path)
	if err != nil || got.AccessKeyID != want.AccessKeyID || got.SecretAccessKey != want.SecretAccessKey {
		t.Fatalf("read back %v, %v", got, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the credentials file survived the read: %v", err)
	}
	if err := os.WriteFile(path, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readCredentialsFile(path); err == nil {
		t.Error("a 0644 credentials file was accepted")
	}
}
