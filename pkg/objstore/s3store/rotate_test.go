package s3store

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
)

// rotateRoot restarts srv (an owned MinIO) with a new root key pair, so
// the old one stops working, and returns the new pair.
func rotateRoot(t *testing.T, srv *testserver.Server, access, secret string) objstore.Credentials {
	t.Helper()
	srv.Stop()
	srv.SetRootCredentials(access, secret)
	if err := srv.Start(); err != nil {
		t.Fatalf("restart MinIO with new keys: %v", err)
	}
	return minioCreds(srv)
}

// TestUpdateCredentials rotates MinIO's root key under a running store:
// the old key is refused, and after UpdateCredentials reads and writes
// (a multipart upload included) work with the new one, on the same store.
func TestUpdateCredentials(t *testing.T) {
	for _, tc := range []struct {
		name string
		// open returns a store on bucket using the key pair a.
		open func(t *testing.T, srv *testserver.Server, bucket string, a objstore.Credentials) *Store
	}{
		{"opened with keys", func(t *testing.T, srv *testserver.Server, bucket string, a objstore.Credentials) *Store {
			s, err := New(t.Context(), minioConfig(srv, objstore.BackendS3, bucket), a)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{"opened on the default chain", func(t *testing.T, srv *testserver.Server, bucket string, a objstore.Credentials) *Store {
			t.Setenv("AWS_ACCESS_KEY_ID", a.AccessKeyID)
			t.Setenv("AWS_SECRET_ACCESS_KEY", a.SecretAccessKey)
			s, err := New(t.Context(), minioConfig(srv, objstore.BackendOSS, bucket), objstore.Credentials{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testserver.NewMinIO(t) // its data goes away with it
			const bucket = "basin-rotate"
			admin, err := NewAdmin(t.Context(), minioConfig(srv, objstore.BackendS3, ""), minioCreds(srv))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = admin.Close() }()
			if err := admin.CreateBucket(t.Context(), bucket); err != nil {
				t.Fatal(err)
			}
			a := minioCreds(srv)
			s := tc.open(t, srv, bucket, a)
			defer func() { _ = s.Close() }()
			put(t, s, "before", []byte("written with key A"))

			b := rotateRoot(t, srv, "basin-rotated", "basin-rotated-secret-5678")
			if _, err := s.Stat(t.Context(), "before"); !errors.Is(err, objstore.ErrAccessDenied) {
				t.Fatalf("Stat with the retired key = %v, want ErrAccessDenied", err)
			}
			if err := s.UpdateCredentials(t.Context(), b); err != nil {
				t.Fatalf("UpdateCredentials: %v", err)
			}
			got, _, err := readAll(t, s, "before", objstore.ReadOptions{Length: -1})
			if err != nil || string(got) != "written with key A" {
				t.Fatalf("read after the switch = %q, %v", got, err)
			}
			big := bytes.Repeat([]byte("0123456789abcdef"), (11<<20)/16) // multipart: 3 parts of 5 MiB
			if _, err := s.Put(t.Context(), "after", bytes.NewReader(big), objstore.PutOptions{Size: int64(len(big))}); err != nil {
				t.Fatalf("multipart Put after the switch: %v", err)
			}
			if info, err := s.Stat(t.Context(), "after"); err != nil || info.Size != int64(len(big)) {
				t.Fatalf("Stat after the switch = %+v, %v", info, err)
			}
		})
	}
}

// TestUpdateCredentialsBackToChain: a store opened on the default chain
// goes back to it with zero credentials.
func TestUpdateCredentialsBackToChain(t *testing.T) {
	srv := testserver.MinIO(t)
	bucket := newBucket(t, srv)
	t.Setenv("AWS_ACCESS_KEY_ID", "basin-chain-unknown")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "basin-chain-unknown-secret")
	s, err := New(t.Context(), minioConfig(srv, objstore.BackendS3, bucket), objstore.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	steps := []struct {
		creds objstore.Credentials
		want  error // of a List after the switch
	}{
		{objstore.Credentials{}, objstore.ErrAccessDenied}, // the chain's (unknown) key
		{minioCreds(srv), nil},
		{objstore.Credentials{}, objstore.ErrAccessDenied},
		{minioCreds(srv), nil},
	}
	for i, st := range steps {
		if err := s.UpdateCredentials(t.Context(), st.creds); err != nil {
			t.Fatalf("step %d: UpdateCredentials: %v", i, err)
		}
		_, err := s.List(t.Context(), objstore.ListOptions{})
		if (st.want == nil) != (err == nil) || (st.want != nil && !errors.Is(err, st.want)) {
			t.Fatalf("step %d: List = %v, want %v", i, err, st.want)
		}
	}
}

func TestUpdateCredentialsRefused(t *testing.T) {
	srv := testserver.MinIO(t)
	s, err := New(t.Context(), minioConfig(srv, objstore.BackendS3, "b12"), minioCreds(srv))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	for _, c := range []struct {
		name  string
		creds objstore.Credentials
	}{
		{"GCS JSON", objstore.Credentials{GCSCredentialsJSON: []byte(`{"private_key":"` + leakSecret + `"}`)}},
		{"no secret key", objstore.Credentials{AccessKeyID: "AK", SessionToken: leakToken}},
		{"no key id", objstore.Credentials{SecretAccessKey: leakSecret}},
		{"default chain after keys", objstore.Credentials{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := s.UpdateCredentials(t.Context(), c.creds)
			if !errors.Is(err, objstore.ErrInvalidConfig) {
				t.Fatalf("UpdateCredentials = %v, want ErrInvalidConfig", err)
			}
			if strings.Contains(err.Error(), leakSecret) || strings.Contains(err.Error(), leakToken) {
				t.Errorf("error leaks a secret: %v", err)
			}
		})
	}
	// A refused switch keeps the working keys.
	if _, err := s.List(t.Context(), objstore.ListOptions{}); errors.Is(err, objstore.ErrAccessDenied) || errors.Is(err, objstore.ErrInvalidConfig) {
		t.Errorf("List after refused switches = %v", err)
	}
}
