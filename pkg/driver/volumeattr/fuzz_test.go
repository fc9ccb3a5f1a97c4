package volumeattr

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse feeds Parse arbitrary parameter and secret maps, written as
// "key=value" lines with a "--" line between the two maps. Whatever the
// input: Parse does not panic, its errors wrap ErrInvalid and quote no
// secret value, and what it accepts survives Encode and Parse unchanged.
func FuzzParse(f *testing.F) {
	f.Add("bucket=b12\ncacheSize=10Gi\nmetadataTTL=-1\n--\naccessKeyID=AK\nsecretAccessKey=SECRETVALUE")
	f.Add("backend=gcs\nbucket=b12\nproject=p\nprefix=a/b\n--\ngcsCredentialsJSON={}")
	f.Add("backend=file\nbucket=/srv/d\nreclaim=retain\nmountOptions=noexec,ro\nwarmup=/train/, val/x.csv,/")
	f.Add("backend=oss\nregion=oss-cn-hangzhou\nreadAhead=1.5Mi\nuid=1000\nfileMode=0640\n--\nendpoint=https://oss.example.com")
	f.Add("cacheSize=1e3\nnegativeMetadataTTL=0\nreadOnly=t\ncsi.storage.k8s.io/pvc/name=x\nunknown=1")
	f.Add("bucket=b12\nreadOnly=true\nopenMode=kernel")
	f.Fuzz(func(t *testing.T, in string) {
		paramText, secretText, _ := strings.Cut(in, "\n--\n")
		params, secrets := lines(paramText), lines(secretText)
		a, err := Parse(params, secrets)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			for k, v := range secrets {
				if secretKey(k) && len(v) >= 8 && strings.Contains(err.Error(), strings.TrimSpace(v)) && !strings.Contains(paramText, strings.TrimSpace(v)) {
					t.Fatalf("error quotes secret %s: %v", k, err)
				}
			}
			return
		}
		b, err := Parse(Encode(a), a.Secrets.Map())
		if err != nil {
			t.Fatalf("Parse(Encode(%+v)) = %v", a, err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("round trip changed\n%#v\ninto\n%#v", a, b)
		}
	})
}

func lines(s string) map[string]string {
	m := map[string]string{}
	for l := range strings.SplitSeq(s, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

func secretKey(k string) bool {
	switch k {
	case SecretAccessKeyID, SecretSecretAccessKey, SecretSessionToken, SecretGCSCredentialsJSON:
		return true
	}
	return false
}
