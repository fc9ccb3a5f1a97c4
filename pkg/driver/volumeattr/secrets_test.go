package volumeattr

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

const (
	testKeyID  = "AKIA-TEST-KEY-ID-7731"
	testSecret = "wJalrXUtnFEMI-test-secret-4412"
	testToken  = "session-token-value-9281"
	testJSON   = `{"type":"service_account","private_key":"-----BEGIN PRIVATE KEY-----secret-pk-5521"}`
)

func TestSecretsNeverPrinted(t *testing.T) {
	a, err := Parse(map[string]string{mountspec.KeyBucket: "b12"},
		map[string]string{SecretAccessKeyID: testKeyID, SecretSecretAccessKey: testSecret, SecretSessionToken: testToken})
	if err != nil {
		t.Fatal(err)
	}
	g := Secrets{GCSCredentialsJSON: testJSON}
	for _, out := range []string{
		fmt.Sprint(a), fmt.Sprintf("%v", a), fmt.Sprintf("%+v", a), fmt.Sprintf("%#v", a),
		fmt.Sprint(a.Secrets), fmt.Sprintf("%#v", a.Secrets), fmt.Sprintf("%+v", &a.Secrets),
		fmt.Sprintf("%+v", g), fmt.Sprintf("%#v", g), fmt.Sprint(a.Credentials()),
	} {
		for _, v := range []string{testKeyID, testSecret, testToken, "secret-pk-5521"} {
			if strings.Contains(out, v) {
				t.Errorf("secret %q printed in %q", v, out)
			}
		}
	}
	if !strings.Contains(fmt.Sprint(a.Secrets), SecretAccessKeyID) {
		t.Errorf("String %q should name the keys that are set", a.Secrets)
	}
}

// No error quotes a secret value, whatever is wrong with the secret.
func TestSecretErrorsRedact(t *testing.T) {
	cases := []map[string]string{
		{SecretAccessKeyID: testKeyID},                                     // half a pair
		{SecretSecretAccessKey: testSecret, SecretSessionToken: testToken}, // the other half
		{SecretGCSCredentialsJSON: testJSON + "{"},                         // bad JSON
		{SecretEndpoint: "ftp://" + testSecret},                            // bad endpoint
		{SecretRegion: testSecret + " X"},                                  // bad region
		{SecretAccessKeyID: testKeyID, SecretSecretAccessKey: testSecret, "extra": testToken},
	}
	for _, backend := range []string{"s3", "gcs", "file"} {
		for i, sec := range cases {
			params := map[string]string{mountspec.KeyBackend: backend, mountspec.KeyBucket: "/d"}
			if backend != "file" {
				params[mountspec.KeyBucket] = "b12"
			}
			_, err := Parse(params, sec)
			if err == nil {
				t.Errorf("%s case %d: no error", backend, i)
				continue
			}
			for _, v := range []string{testKeyID, testSecret, testToken, "secret-pk-5521"} {
				if strings.Contains(err.Error(), v) {
					t.Errorf("%s case %d: error quotes a secret: %v", backend, i, err)
				}
			}
		}
	}
}

func TestSecretsCredentials(t *testing.T) {
	s, err := ParseSecrets(map[string]string{SecretAccessKeyID: " " + testKeyID + "\n", SecretSecretAccessKey: testSecret + "\n", SecretEndpoint: ""})
	if err != nil {
		t.Fatal(err)
	}
	c := s.Credentials()
	if c.AccessKeyID != testKeyID || c.SecretAccessKey != testSecret || c.SessionToken != "" || c.GCSCredentialsJSON != nil {
		t.Errorf("Credentials = %#v (values trimmed?)", c)
	}
	if !s.HasCredentials() || (Secrets{Endpoint: "http://x"}).HasCredentials() {
		t.Error("HasCredentials wrong")
	}
	g := Secrets{GCSCredentialsJSON: testJSON}.Credentials()
	if string(g.GCSCredentialsJSON) != testJSON {
		t.Error("GCS JSON not converted")
	}
	if err := (Secrets{AccessKeyID: "a", SecretAccessKey: "b"}).CheckBackend(objstore.BackendGCS); err == nil {
		t.Error("CheckBackend accepted access keys for gcs")
	}
}

func TestSharedCacheSecrets(t *testing.T) {
	a, err := Parse(map[string]string{"bucket": "b12", "sharedCache": "http://127.0.0.1:9100/tier"},
		map[string]string{SecretSharedCacheAccessKeyID: testKeyID, SecretSharedCacheSecretAccessKey: testSecret + "\n"})
	if err != nil {
		t.Fatal(err)
	}
	if c := a.SharedCacheCredentials(); c.AccessKeyID != testKeyID || c.SecretAccessKey != testSecret {
		t.Errorf("SharedCacheCredentials = %#v", c)
	}
	if !a.Credentials().IsZero() {
		t.Error("the tier's keys became the origin's credentials")
	}
	if s := fmt.Sprintf("%v %#v", a, a); strings.Contains(s, testKeyID) || strings.Contains(s, testSecret) {
		t.Errorf("printed attributes show a tier key: %s", s)
	}
	_, err = Parse(map[string]string{"bucket": "b12"}, map[string]string{SecretSharedCacheAccessKeyID: testKeyID})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), SecretSharedCacheSecretAccessKey) || strings.Contains(err.Error(), testKeyID) {
		t.Errorf("half a tier key pair: %v; want ErrInvalid naming %s without the value", err, SecretSharedCacheSecretAccessKey)
	}
}
