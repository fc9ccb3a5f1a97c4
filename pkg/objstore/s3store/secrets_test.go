package s3store

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
)

// Recognisable secrets: none may appear in any error or printed value.
const (
	leakSecret = "SECRET-b4s1n-do-not-print-7f3e"
	leakToken  = "TOKEN-b4s1n-do-not-print-91ac"
)

// TestSecretsNeverLeak calls every method with rejected credentials that
// carry recognisable secrets, and checks each error is classified and
// carries neither secret, nor do printed Credentials, Store or Admin.
func TestSecretsNeverLeak(t *testing.T) {
	srv := testserver.MinIO(t)
	bucket := newBucket(t, srv)
	good, err := New(t.Context(), minioConfig(srv, objstore.BackendS3, bucket), minioCreds(srv))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = good.Close() }()
	put(t, good, "obj", []byte("data"))

	credSets := []struct {
		name  string
		creds objstore.Credentials
	}{
		// MinIO answers InvalidAccessKeyId.
		{"unknown key id", objstore.Credentials{AccessKeyID: "basin-unknown", SecretAccessKey: leakSecret, SessionToken: leakToken}},
		// The secret is the signing key: SignatureDoesNotMatch.
		{"wrong secret", objstore.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: leakSecret}},
	}
	for _, cs := range credSets {
		t.Run(cs.name, func(t *testing.T) {
			creds := cs.creds
			checkPrinted(t, "Credentials", fmt.Sprintf("%v %+v %#v %s %v", creds, creds, creds, creds, &creds))
			if s := fmt.Sprint(creds); !strings.Contains(s, "REDACTED") {
				t.Errorf("Credentials print as %q, want REDACTED", s)
			}

			for _, backend := range []objstore.Backend{objstore.BackendS3, objstore.BackendOSS} {
				s, err := New(t.Context(), minioConfig(srv, backend, bucket), creds)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = s.Close() }()
				admin, err := NewAdmin(t.Context(), minioConfig(srv, backend, ""), creds)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = admin.Close() }()
				checkPrinted(t, "Store", fmt.Sprintf("%v %+v %#v", s, s, *s))
				checkPrinted(t, "Admin", fmt.Sprintf("%v %+v %#v", admin, admin, *admin))

				ctx := t.Context()
				calls := map[string]error{}
				_, calls["Stat"] = s.Stat(ctx, "obj")
				_, _, calls["Read"] = s.Read(ctx, "obj", objstore.ReadOptions{Length: -1})
				_, _, calls["Read at end"] = s.Read(ctx, "obj", objstore.ReadOptions{Offset: 4, Length: -1})
				_, calls["List"] = s.List(ctx, objstore.ListOptions{Delimiter: "/"})
				_, calls["Put"] = s.Put(ctx, "new", bytes.NewReader([]byte("x")), objstore.PutOptions{Size: 1})
				_, calls["Put multipart"] = s.Put(ctx, "new-big", bytes.NewReader(pattern(6<<20)), objstore.PutOptions{Size: -1})
				calls["Delete"] = s.Delete(ctx, "obj")
				_, calls["Copy"] = s.Copy(ctx, "obj", "copy")
				_, calls["DeletePrefix"] = s.DeletePrefix(ctx, "")
				_, calls["BucketExists"] = admin.BucketExists(ctx, bucket)
				calls["CreateBucket"] = admin.CreateBucket(ctx, "basin-intruder")
				calls["DeleteBucket"] = admin.DeleteBucket(ctx, bucket)
				for name, err := range calls {
					what := string(backend) + " " + name
					if !errors.Is(err, objstore.ErrAccessDenied) {
						t.Errorf("%s: %v, want ErrAccessDenied", what, err)
					}
					if err != nil {
						checkPrinted(t, what, fmt.Sprintf("%v %+v", err, err))
					}
				}
			}
		})
	}

	// Configuration errors about credentials name no secret either.
	_, err = New(t.Context(), minioConfig(srv, objstore.BackendS3, bucket), objstore.Credentials{SecretAccessKey: leakSecret})
	if !errors.Is(err, objstore.ErrInvalidConfig) {
		t.Errorf("New with a secret but no key id: %v", err)
	} else {
		checkPrinted(t, "New", err.Error())
	}
	if got := mustStat(t, good, "obj"); got.Size != 4 {
		t.Errorf("rejected calls changed obj: %+v", got)
	}
}

func checkPrinted(t *testing.T, what, printed string) {
	t.Helper()
	for _, secret := range []string{leakSecret, leakToken} {
		if strings.Contains(printed, secret) {
			t.Errorf("%s prints a secret: %s", what, printed)
		}
	}
}

func mustStat(t *testing.T, s *Store, key string) objstore.ObjectInfo {
	t.Helper()
	oi, err := s.Stat(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	return oi
}
