package placement

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func webhookConfig(url string) *admissionregv1.MutatingWebhookConfiguration {
	cfg := &admissionregv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: WebhookConfigurationName},
		Webhooks: []admissionregv1.MutatingWebhook{{Name: "placement.basin.csi.dev", ClientConfig: admissionregv1.WebhookClientConfig{
			Service: &admissionregv1.ServiceReference{Namespace: "basin-system", Name: "basin-placement"}}}}}
	if url != "" {
		cfg.Webhooks[0].ClientConfig = admissionregv1.WebhookClientConfig{URL: &url}
	}
	return cfg
}

// clock is a settable Now.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func rotator(t *testing.T, c client.Client, clk *clock) *Rotator {
	t.Helper()
	return &Rotator{Reader: c, Writer: c, Namespace: "basin-system", SecretName: SecretName, WebhookName: WebhookConfigurationName,
		CALifetime: 300 * 24 * time.Hour, CertLifetime: 30 * 24 * time.Hour, Interval: time.Minute, Now: clk.now}
}

// check verifies what r serves against the caBundle the configuration
// holds, for host at clk's time, and returns the served leaf.
func check(t *testing.T, c client.Client, r *Rotator, host string, at time.Time) *x509.Certificate {
	t.Helper()
	var cfg admissionregv1.MutatingWebhookConfiguration
	if err := c.Get(context.Background(), client.ObjectKey{Name: WebhookConfigurationName}, &cfg); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cfg.Webhooks[0].ClientConfig.CABundle) {
		t.Fatal("caBundle holds no certificate")
	}
	served, err := r.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(served.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: host, CurrentTime: at}); err != nil {
		t.Fatalf("the served certificate does not verify against the caBundle for %s: %v", host, err)
	}
	return leaf
}

func secretVersion(t *testing.T, c client.Client) string {
	t.Helper()
	var s corev1.Secret
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "basin-system", Name: SecretName}, &s); err != nil {
		t.Fatal(err)
	}
	return s.ResourceVersion
}

func TestRotatorIssuesStoresAndRenews(t *testing.T) {
	ctx := context.Background()
	c := fakeClient(t, webhookConfig(""))
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r := rotator(t, c, clk)
	if _, err := r.GetCertificate(nil); err == nil {
		t.Fatal("a certificate before the first round")
	}
	if err := r.Round(ctx); err != nil {
		t.Fatal(err)
	}
	host := "basin-placement.basin-system.svc"
	first := check(t, c, r, host, clk.t)
	v1 := secretVersion(t, c)

	// Nothing due: nothing written, the same certificate.
	clk.t = clk.t.Add(24 * time.Hour)
	if err := r.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if v := secretVersion(t, c); v != v1 {
		t.Errorf("the secret was rewritten (%s -> %s) with nothing due", v1, v)
	}
	// A second replica adopts the Secret as it is.
	r2 := rotator(t, c, clk)
	if err := r2.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if got := check(t, c, r2, host, clk.t); !got.Equal(first) {
		t.Error("the second replica serves another certificate")
	}

	// Two thirds into the serving certificate's life: a new one, same CA.
	clk.t = first.NotBefore.Add(21 * 24 * time.Hour)
	if err := r.Round(ctx); err != nil {
		t.Fatal(err)
	}
	renewed := check(t, c, r, host, clk.t)
	if renewed.Equal(first) || renewed.Issuer.String() != first.Issuer.String() {
		t.Errorf("serving certificate not renewed under the same CA")
	}

	// Two thirds into the CA's life: a new CA, the old one kept in the
	// bundle so the other replica's certificate stays trusted.
	clk.t = clk.t.Add(200 * 24 * time.Hour)
	var sec corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: "basin-system", Name: SecretName}, &sec); err != nil {
		t.Fatal(err)
	}
	oldCA := string(sec.Data[secretCACert])
	if err := r.Round(ctx); err != nil {
		t.Fatal(err)
	}
	check(t, c, r, host, clk.t)
	var cfg admissionregv1.MutatingWebhookConfiguration
	if err := c.Get(ctx, client.ObjectKey{Name: WebhookConfigurationName}, &cfg); err != nil {
		t.Fatal(err)
	}
	if n := countPEM(cfg.Webhooks[0].ClientConfig.CABundle); n != 2 {
		t.Errorf("caBundle holds %d certificates after a CA renewal, want 2 (new and previous)", n)
	}
	if b := string(cfg.Webhooks[0].ClientConfig.CABundle); !strings.Contains(b, oldCA) || strings.HasPrefix(b, oldCA) {
		t.Error("the caBundle does not hold the previous CA after the new one")
	}
}

func TestRotatorServesTheConfiguredURLHost(t *testing.T) {
	c := fakeClient(t, webhookConfig("https://127.0.0.1:9443/mutate-v1-pod"))
	clk := &clock{t: time.Now()}
	r := rotator(t, c, clk)
	if err := r.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	leaf := check(t, c, r, "127.0.0.1", clk.t)
	if len(leaf.IPAddresses) != 1 || len(leaf.DNSNames) != 0 {
		t.Errorf("SANs: IPs %v, names %v; want only 127.0.0.1", leaf.IPAddresses, leaf.DNSNames)
	}
}

func TestRotatorWithoutConfiguration(t *testing.T) {
	r := rotator(t, fakeClient(t), &clock{t: time.Now()})
	if err := r.Round(context.Background()); err == nil {
		t.Fatal("a round without the webhook configuration succeeded")
	}
	if _, err := r.GetCertificate(nil); err == nil {
		t.Fatal("serving a certificate nobody can verify")
	}
}

func countPEM(b []byte) int {
	n := 0
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return n
		}
		n++
	}
}
