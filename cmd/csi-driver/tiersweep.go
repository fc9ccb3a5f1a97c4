package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/cache/tier"
	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/tiersweep"
)

// startTierSweep starts the controller's pass over the shared cache tiers
// (pkg/tiersweep) unless its interval is 0. Without the API server
// (restErr) it is off, and says so.
func startTierSweep(ctx context.Context, cfg controllerConfig, restCfg *rest.Config, restErr error) error {
	if cfg.TierSweepInterval <= 0 {
		return nil
	}
	if restErr != nil {
		klog.InfoS("no Kubernetes API: the controller's sweep of the shared cache tiers is off", "err", restErr)
		return nil
	}
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("shared cache sweep: %w", err)
	}
	var m *tiersweep.Metrics
	if cfg.Driver.Metrics != nil {
		if m, err = tiersweep.NewMetrics(cfg.Driver.Metrics); err != nil {
			return fmt.Errorf("shared cache sweep: %w", err)
		}
	}
	sw := tiersweep.New(tiersweep.Config{Metrics: m})
	go sw.Run(ctx, cfg.TierSweepInterval, tierVolumes(cs, cfg.Driver.Name))
	return nil
}

// tierVolumes lists the driver's PersistentVolumes that bound a shared
// cache tier (sharedCache with sharedCacheSize or sharedCacheMaxAge),
// each with the tier's credentials: the sharedCache* keys of the secret
// the nodes stage it with, else of its publish secret, else of the
// provisioner's; none, the default chain. A volume whose attributes or
// secret cannot be read is left out and reported.
func tierVolumes(cs kubernetes.Interface, driverName string) func(context.Context) ([]tiersweep.Volume, error) {
	bounds := func(pv *corev1.PersistentVolume) bool { return boundsTier(pv.Spec.CSI.VolumeAttributes) }
	return func(ctx context.Context) ([]tiersweep.Volume, error) {
		var out []tiersweep.Volume
		err := eachVolume(ctx, cs, driverName, bounds, tierSecretRef, func(pv *corev1.PersistentVolume, secrets map[string]string) error {
			a, err := volumeattr.Parse(pv.Spec.CSI.VolumeAttributes, secrets)
			if err != nil {
				return err
			}
			out = append(out, tiersweep.Volume{Name: pv.Name, Spec: a.Spec, Credentials: a.SharedCacheCredentials(),
				Limits: tier.Limits{MaxBytes: a.SharedCacheSize, MaxAge: a.SharedCacheMaxAge}})
			return nil
		})
		return out, err
	}
}

// boundsTier reports whether volume attributes name a shared cache tier
// with a bound.
func boundsTier(attrs map[string]string) bool {
	return attrs[mountspec.KeySharedCache] != "" &&
		(attrs[volumeattr.KeySharedCacheSize] != "" || attrs[volumeattr.KeySharedCacheMaxAge] != "")
}

// tierSecretRef is the secret whose sharedCache* keys the nodes use for
// a volume's tier.
func tierSecretRef(pv *corev1.PersistentVolume) *corev1.SecretReference {
	switch {
	case pv.Spec.CSI.NodeStageSecretRef != nil:
		return pv.Spec.CSI.NodeStageSecretRef
	case pv.Spec.CSI.NodePublishSecretRef != nil:
		return pv.Spec.CSI.NodePublishSecretRef
	}
	return secretRef(pv)
}
