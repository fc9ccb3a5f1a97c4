package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/basin-csi/basin/pkg/driver"
)

// The annotations the csi-provisioner sidecar puts on a PersistentVolume
// it provisioned with a provisioner secret: which secret DeleteVolume
// gets.
const (
	deletionSecretName      = "volume.kubernetes.io/provisioner-deletion-secret-name"
	deletionSecretNamespace = "volume.kubernetes.io/provisioner-deletion-secret-namespace"
)

// sweptVolumes lists the driver's PersistentVolumes with their
// credentials for the controller's sweep of abandoned uploads
// (driver.UploadSweeper): the provisioner secret of a provisioned volume,
// the stage or publish secret of a static one, none otherwise (the
// default credential chain).
func sweptVolumes(cs kubernetes.Interface, driverName string) func(context.Context) ([]driver.SweptVolume, error) {
	return func(ctx context.Context) ([]driver.SweptVolume, error) {
		var out []driver.SweptVolume
		err := eachVolume(ctx, cs, driverName, nil, secretRef, func(pv *corev1.PersistentVolume, secrets map[string]string) error {
			out = append(out, driver.SweptVolume{ID: pv.Spec.CSI.VolumeHandle, Secrets: secrets})
			return nil
		})
		return out, err
	}
}

// eachVolume calls add with every PersistentVolume of the driver that
// keep accepts (nil: all) and the data of the secret ref names for it
// (nil: none). A volume whose secret cannot be read, or that add refuses,
// is left out; the error counts them and wraps the first.
func eachVolume(ctx context.Context, cs kubernetes.Interface, driverName string, keep func(*corev1.PersistentVolume) bool,
	ref func(*corev1.PersistentVolume) *corev1.SecretReference, add func(*corev1.PersistentVolume, map[string]string) error) error {
	pvs, err := cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list PersistentVolumes: %w", err)
	}
	var errs []error
	for i := range pvs.Items {
		pv := &pvs.Items[i]
		if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != driverName || (keep != nil && !keep(pv)) {
			continue
		}
		var secrets map[string]string
		if r := ref(pv); r != nil {
			s, err := cs.CoreV1().Secrets(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
			if err != nil {
				errs = append(errs, fmt.Errorf("PersistentVolume %s: secret %s/%s: %w", pv.Name, r.Namespace, r.Name, err))
				continue
			}
			secrets = make(map[string]string, len(s.Data))
			for k, b := range s.Data {
				secrets[k] = string(b)
			}
		}
		if err := add(pv, secrets); err != nil {
			errs = append(errs, fmt.Errorf("PersistentVolume %s: %w", pv.Name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d volumes left out: %w", len(errs), errs[0])
	}
	return nil
}

// secretRef is the secret whose credentials reach a volume's bucket.
func secretRef(pv *corev1.PersistentVolume) *corev1.SecretReference {
	if name, ns := pv.Annotations[deletionSecretName], pv.Annotations[deletionSecretNamespace]; name != "" {
		return &corev1.SecretReference{Name: name, Namespace: ns}
	}
	if pv.Spec.CSI.NodeStageSecretRef != nil {
		return pv.Spec.CSI.NodeStageSecretRef
	}
	return pv.Spec.CSI.NodePublishSecretRef
}
