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
		pvs, err := cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list PersistentVolumes: %w", err)
		}
		var out []driver.SweptVolume
		var errs []error
		for i := range pvs.Items {
			pv := &pvs.Items[i]
			if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != driverName {
				continue
			}
			secrets, err := secretData(ctx, cs, pv, secretRef(pv))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, driver.SweptVolume{ID: pv.Spec.CSI.VolumeHandle, Secrets: secrets})
		}
		if len(errs) > 0 {
			return out, fmt.Errorf("%d volumes left out: %w", len(errs), errs[0])
		}
		return out, nil
	}
}

// secretData reads the secret ref names for pv (nil: none, the default
// chain).
func secretData(ctx context.Context, cs kubernetes.Interface, pv *corev1.PersistentVolume, ref *corev1.SecretReference) (map[string]string, error) {
	if ref == nil {
		return nil, nil
	}
	s, err := cs.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("PersistentVolume %s: secret %s/%s: %w", pv.Name, ref.Namespace, ref.Name, err)
	}
	out := make(map[string]string, len(s.Data))
	for k, b := range s.Data {
		out[k] = string(b)
	}
	return out, nil
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
