package main

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/basin-csi/basin/pkg/cache/tier"
)

// TestTierVolumes: the tiers' sweep visits the driver's volumes that
// bound a shared cache tier, with the tier's credentials from the secret
// the nodes stage them with (else the provisioner's); volumes without a
// bound, of other drivers, or whose attributes do not parse are left out,
// the last reported.
func TestTierVolumes(t *testing.T) {
	const url = "http://tier.example:9000/tier"
	pv := func(name, driver string, attrs map[string]string, annotations map[string]string, stage *corev1.SecretReference) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "h-" + name, VolumeAttributes: attrs, NodeStageSecretRef: stage},
			}},
		}
	}
	bounded := map[string]string{"bucket": "data", "sharedCache": url, "sharedCacheSize": "1Ti", "sharedCacheMaxAge": "168h"}
	secret := func(ns, name, key string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{
			"sharedCacheAccessKeyID": []byte(key), "sharedCacheSecretAccessKey": []byte("s")}}
	}
	cs := fake.NewClientset(
		pv("staged", "basin.csi.dev", bounded, map[string]string{deletionSecretName: "prov", deletionSecretNamespace: "kube-system"},
			&corev1.SecretReference{Namespace: "apps", Name: "stage"}),
		pv("provisioned", "basin.csi.dev", bounded, map[string]string{deletionSecretName: "prov", deletionSecretNamespace: "kube-system"}, nil),
		pv("unbounded", "basin.csi.dev", map[string]string{"bucket": "data", "sharedCache": url}, nil, nil),
		pv("invalid", "basin.csi.dev", map[string]string{"bucket": "data", "sharedCache": url, "sharedCacheSize": "lots"}, nil, nil),
		pv("other", "ebs.csi.aws.com", bounded, nil, nil),
		secret("kube-system", "prov", "AKPROV"),
		secret("apps", "stage", "AKSTAGE"),
	)
	vols, err := tierVolumes(cs, "basin.csi.dev")(t.Context())
	if err == nil {
		t.Error("a volume whose attributes do not parse was not reported")
	}
	got := map[string]string{}
	for _, v := range vols {
		got[v.Name] = v.Credentials.AccessKeyID
		if v.Spec.SharedCache != url || v.Limits != (tier.Limits{MaxBytes: 1 << 40, MaxAge: 7 * 24 * time.Hour}) {
			t.Errorf("volume %s: tier %q, limits %+v", v.Name, v.Spec.SharedCache, v.Limits)
		}
	}
	want := map[string]string{"staged": "AKSTAGE", "provisioned": "AKPROV"}
	if len(got) != len(want) || got["staged"] != want["staged"] || got["provisioned"] != want["provisioned"] {
		t.Errorf("listed %v, want %v", got, want)
	}
}
