//go:build k8se2e

package k8s

import (
	"strings"
	"testing"
	"time"
)

// TestBadInput is scenario 7: a StorageClass with an unknown parameter
// and one whose secret is missing leave their claims Pending with an
// event that names the key or the secret, and nothing is created in the
// bucket.
func TestBadInput(t *testing.T) {
	scenario(t, "bad-input")
	ns := namespace(t, "e2e-badinput")
	credentialsSecret(t, "e2e-badinput-creds")
	s := openBucket(t, "e2e-badinput", true)
	storageClass(t, "e2e-unknown-key", "e2e-badinput-creds", map[string]string{
		"provisioning": "prefix", "bucket": "e2e-badinput", "cacheSizee": "10Gi"})
	storageClass(t, "e2e-missing-secret", "e2e-no-such-secret", map[string]string{
		"provisioning": "prefix", "bucket": "e2e-badinput"})
	apply(t, pvc(ns, "unknown-key", "e2e-unknown-key", "ReadWriteMany"))
	apply(t, pvc(ns, "missing-secret", "e2e-missing-secret", "ReadWriteMany"))

	cases := []struct{ claim, want string }{
		{"unknown-key", "cacheSizee"},
		{"missing-secret", "e2e-no-such-secret"},
	}
	for _, c := range cases {
		var msg string
		waitFor(t, "a ProvisioningFailed event for "+c.claim, 90*time.Second, func() bool {
			msg = jsonpath(ns, "events", `{range .items[?(@.involvedObject.name=="`+c.claim+`")]}{.reason}: {.message}{"\n"}{end}`)
			return strings.Contains(msg, "ProvisioningFailed")
		})
		if !strings.Contains(msg, c.want) {
			t.Errorf("%s: the events do not name %q:\n%s", c.claim, c.want, msg)
		}
		if ph := jsonpath(ns, "pvc/"+c.claim, "{.status.phase}"); ph != "Pending" {
			t.Errorf("%s is %s, want Pending", c.claim, ph)
		}
		t.Logf("%s: %s", c.claim, strings.TrimSpace(msg))
	}
	if k := keys(t, s, ""); len(k) != 0 {
		t.Errorf("the refused claims created objects: %v", k)
	}
}
