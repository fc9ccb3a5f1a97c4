package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestSweptVolumes: the controller's sweep visits the driver's
// PersistentVolumes only, each with the secret its DeleteVolume would get
// (the provisioner's deletion secret), else its stage secret, else none;
// a volume whose secret is missing is left out and reported.
func TestSweptVolumes(t *testing.T) {
	pv := func(name, driver string, annotations map[string]string, stage *corev1.SecretReference) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "h-" + name, NodeStageSecretRef: stage},
			}},
		}
	}
	secret := func(ns, name, key string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"accessKeyID": []byte(key)}}
	}
	cs := fake.NewClientset(
		pv("provisioned", "basin.csi.dev", map[string]string{deletionSecretName: "prov", deletionSecretNamespace: "kube-system"}, nil),
		pv("static", "basin.csi.dev", nil, &corev1.SecretReference{Namespace: "apps", Name: "stage"}),
		pv("chain", "basin.csi.dev", nil, nil),
		pv("missing", "basin.csi.dev", nil, &corev1.SecretReference{Namespace: "apps", Name: "gone"}),
		pv("other", "ebs.csi.aws.com", nil, nil),
		secret("kube-system", "prov", "AKPROV"),
		secret("apps", "stage", "AKSTAGE"),
	)
	vols, err := sweptVolumes(cs, "basin.csi.dev")(t.Context())
	if err == nil {
		t.Error("a volume whose secret is missing was not reported")
	}
	got := map[string]string{}
	for _, v := range vols {
		got[v.ID] = v.Secrets["accessKeyID"]
	}
	want := map[string]string{"h-provisioned": "AKPROV", "h-static": "AKSTAGE", "h-chain": ""}
	if len(got) != len(want) {
		t.Errorf("swept %v, want %v", got, want)
	}
	for id, key := range want {
		if k, ok := got[id]; !ok || k != key {
			t.Errorf("volume %s: secret key %q (listed %v), want %q", id, k, ok, key)
		}
	}
}
