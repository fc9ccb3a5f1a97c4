package placement

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/url"
	"slices"
	"sync/atomic"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Rotator keeps the webhook's CA and serving certificate in a Secret,
// serves the certificate from memory and keeps the CA bundle of the
// webhook configuration current. Every replica runs one; they agree
// through the Secret (optimistic concurrency: the first write wins, the
// others adopt it on their next round).
type Rotator struct {
	// constant
	Reader client.Reader // uncached: the Secret and the configuration are read when needed
	Writer client.Client
	// Namespace and SecretName name the Secret; WebhookName the
	// MutatingWebhookConfiguration whose caBundle is patched and whose
	// clientConfigs name the hosts the certificate must serve.
	Namespace, SecretName, WebhookName string
	// CALifetime and CertLifetime are the validity of new certificates;
	// each is renewed two thirds into its life.
	CALifetime, CertLifetime time.Duration
	// Interval is how often the Secret and configuration are checked.
	Interval time.Duration
	Now      func() time.Time
	Metrics  *Metrics

	// current is the certificate served (nil until the first round).
	current atomic.Pointer[tls.Certificate]
}

// GetCertificate serves the current certificate (tls.Config).
func (r *Rotator) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := r.current.Load(); c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("%w: not ready", errCertificate)
}

// NeedLeaderElection is false: every replica serves the webhook.
func (r *Rotator) NeedLeaderElection() bool { return false }

// Start runs rounds until ctx ends: at once, then every Interval, sooner
// after a failure.
func (r *Rotator) Start(ctx context.Context) error {
	retry := time.Second
	for {
		wait := r.Interval
		if err := r.Round(ctx); err != nil {
			r.Metrics.fail("tls")
			klog.ErrorS(err, "placement: certificate round failed; the webhook fails open until it succeeds", "secret", klog.KRef(r.Namespace, r.SecretName), "retryIn", retry)
			wait, retry = retry, min(2*retry, r.Interval)
		} else {
			retry = time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// Round makes sure the Secret holds a valid CA and a serving certificate
// for the webhook's hosts that is not due, then publishes the CA bundle
// and serves the certificate.
func (r *Rotator) Round(ctx context.Context) error {
	now := r.Now()
	var cfg admissionregv1.MutatingWebhookConfiguration
	if err := r.Reader.Get(ctx, client.ObjectKey{Name: r.WebhookName}, &cfg); err != nil {
		return fmt.Errorf("placement: webhook configuration: %w", err)
	}
	hosts := webhookHosts(&cfg)
	if len(hosts) == 0 {
		return fmt.Errorf("placement: webhook configuration %s names no service or URL", r.WebhookName)
	}
	var sec corev1.Secret
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.SecretName}, &sec)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("placement: secret: %w", err)
	}
	data := sec.Data
	if data == nil {
		data = map[string][]byte{}
	}
	changed := false
	ca := parseKeyPair(data[secretCACert], data[secretCAKey])
	if ca == nil || !ca.cert.IsCA || !now.Before(dueAt(ca.cert)) {
		if ca, err = newCA(now, r.CALifetime); err != nil {
			return err
		}
		klog.InfoS("placement: new CA", "secret", klog.KRef(r.Namespace, r.SecretName), "notAfter", ca.cert.NotAfter)
		data[secretCACert], data[secretCAKey] = ca.certPEM, ca.keyPEM
		changed = true
	}
	if b := bundle(ca, data[secretCABundle], now); !bytes.Equal(b, data[secretCABundle]) {
		data[secretCABundle] = b
		changed = true
	}
	leaf := parseKeyPair(data[secretCert], data[secretKey])
	if !serves(leaf, ca, hosts, now) {
		if leaf, err = issue(ca, hosts, now, r.CertLifetime); err != nil {
			return err
		}
		klog.InfoS("placement: new serving certificate", "secret", klog.KRef(r.Namespace, r.SecretName), "hosts", hosts, "notAfter", leaf.cert.NotAfter)
		data[secretCert], data[secretKey] = leaf.certPEM, leaf.keyPEM
		changed = true
	}
	if changed {
		if err := r.store(ctx, &sec, exists, data); err != nil {
			return err
		}
	}
	if err := r.publish(ctx, &cfg, data[secretCABundle]); err != nil {
		return err
	}
	c, err := leaf.tlsCertificate()
	if err != nil {
		return err
	}
	r.current.Store(c)
	r.Metrics.serving(leaf.cert.NotAfter)
	return nil
}

// store writes data to the Secret; a conflict (another replica wrote
// first) is an error, and the next round adopts the other's.
func (r *Rotator) store(ctx context.Context, sec *corev1.Secret, exists bool, data map[string][]byte) error {
	if !exists {
		sec = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: r.SecretName, Labels: map[string]string{
				"app.kubernetes.io/part-of": "basin", "app.kubernetes.io/component": "placement-webhook"}},
			Type: corev1.SecretTypeTLS,
			Data: data,
		}
		if err := r.Writer.Create(ctx, sec); err != nil {
			return fmt.Errorf("placement: create secret: %w", err)
		}
		return nil
	}
	sec.Data = data
	if err := r.Writer.Update(ctx, sec); err != nil {
		return fmt.Errorf("placement: update secret: %w", err)
	}
	return nil
}

// publish sets caBundle on every webhook of cfg that does not hold it.
func (r *Rotator) publish(ctx context.Context, cfg *admissionregv1.MutatingWebhookConfiguration, caBundle []byte) error {
	orig := cfg.DeepCopy()
	changed := false
	for i := range cfg.Webhooks {
		if !bytes.Equal(cfg.Webhooks[i].ClientConfig.CABundle, caBundle) {
			cfg.Webhooks[i].ClientConfig.CABundle = slices.Clone(caBundle)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if err := r.Writer.Patch(ctx, cfg, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("placement: patch caBundle of %s: %w", r.WebhookName, err)
	}
	klog.InfoS("placement: CA bundle published", "webhookConfiguration", r.WebhookName)
	return nil
}

// webhookHosts are the names the API server verifies when it calls the
// webhooks of cfg: name.namespace.svc for a service (and the
// cluster.local form), the host of a URL.
func webhookHosts(cfg *admissionregv1.MutatingWebhookConfiguration) []string {
	var hosts []string
	add := func(h string) {
		if h != "" && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	for _, w := range cfg.Webhooks {
		if s := w.ClientConfig.Service; s != nil {
			add(s.Name + "." + s.Namespace + ".svc")
			add(s.Name + "." + s.Namespace + ".svc.cluster.local")
		}
		if w.ClientConfig.URL != nil {
			if u, err := url.Parse(*w.ClientConfig.URL); err == nil {
				add(u.Hostname())
			}
		}
	}
	return hosts
}
