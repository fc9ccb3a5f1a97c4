package placement

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
)

// Names shared with deploy/kubernetes/placement-webhook.yaml.
const (
	// WebhookConfigurationName is the MutatingWebhookConfiguration whose
	// caBundle the controller patches.
	WebhookConfigurationName = "basin-placement"
	// SecretName is the TLS Secret in the controller's namespace.
	SecretName = "basin-placement-webhook-tls"
	// Port is the webhook's HTTPS port on the controller pod.
	Port = 9443
	// Path is the webhook's URL path.
	Path = "/mutate-v1-pod"
)

// Lifetimes of the certificates the controller makes; each is renewed
// two thirds into its life (the CA after about 6.7 years, the serving
// certificate after about 8 months), and the Secret is checked every
// minute so replicas pick up each other's renewals.
const (
	caLifetime   = 10 * 365 * 24 * time.Hour
	certLifetime = 365 * 24 * time.Hour
	checkEvery   = time.Minute
)

// Config is what Setup needs (pkg/orchestrator passes its own).
type Config struct {
	// Namespace holds the TLS Secret.
	Namespace string
	// DriverName is the CSI driver whose volumes are considered.
	DriverName string
	// Metrics receives the webhook's metrics; nil registers none.
	Metrics prometheus.Registerer
}

// Setup adds the webhook's server, its certificate rotator and the
// VolumeCache index to mgr. The server and the rotator run on every
// replica.
func Setup(ctx context.Context, mgr manager.Manager, cfg Config) error {
	if cfg.Namespace == "" || cfg.DriverName == "" {
		return fmt.Errorf("placement: Namespace and DriverName are required")
	}
	var m *Metrics
	if cfg.Metrics != nil {
		var err error
		if m, err = NewMetrics(cfg.Metrics); err != nil {
			return fmt.Errorf("placement: %w", err)
		}
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &basinv1.VolumeCache{}, volumeIndex, cacheVolume); err != nil {
		return fmt.Errorf("placement: index VolumeCaches: %w", err)
	}
	// Informers start with the manager, not on the first pod.
	for _, o := range []client.Object{&corev1.PersistentVolumeClaim{}, &corev1.PersistentVolume{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, o); err != nil {
			return fmt.Errorf("placement: %w", err)
		}
	}
	rot := &Rotator{
		Reader: mgr.GetAPIReader(), Writer: mgr.GetClient(),
		Namespace: cfg.Namespace, SecretName: SecretName, WebhookName: WebhookConfigurationName,
		CALifetime: caLifetime, CertLifetime: certLifetime, Interval: checkEvery,
		Now: time.Now, Metrics: m,
	}
	srv := webhook.NewServer(webhook.Options{
		Port: Port,
		TLSOpts: []func(*tls.Config){func(c *tls.Config) {
			c.GetCertificate = rot.GetCertificate
			c.MinVersion = tls.VersionTLS12
		}},
	})
	srv.Register(Path, &admission.Webhook{Handler: &Handler{Reader: mgr.GetClient(), DriverName: cfg.DriverName, Metrics: m}})
	for _, r := range []manager.Runnable{rot, srv} {
		if err := mgr.Add(r); err != nil {
			return fmt.Errorf("placement: %w", err)
		}
	}
	return nil
}

// cacheVolume is the volumeIndex of a VolumeCache: its LabelVolume.
func cacheVolume(o client.Object) []string {
	if v := o.GetLabels()[basinv1.LabelVolume]; v != "" {
		return []string{v}
	}
	return nil
}
