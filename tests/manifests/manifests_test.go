package manifests

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
)

// TestManifestsDecodeStrictly decodes every document of deploy/ and
// examples/ (loadManifests fails the test on any error) and checks that
// the kinds Basin needs are there.
func TestManifestsDecodeStrictly(t *testing.T) {
	docs := loadManifests(t)
	count := map[string]int{}
	for _, d := range docs {
		switch o := d.obj.(type) {
		case *storagev1.StorageClass:
			if o.Provisioner == driverName {
				count["StorageClass"]++
			}
		case *corev1.PersistentVolume:
			if o.Spec.CSI != nil && o.Spec.CSI.Driver == driverName {
				count["PersistentVolume"]++
			}
		}
	}
	t.Logf("%d documents; Basin StorageClasses: %d, PersistentVolumes: %d", len(docs), count["StorageClass"], count["PersistentVolume"])
	if count["StorageClass"] < 3 || count["PersistentVolume"] < 1 {
		t.Errorf("want at least 3 Basin StorageClasses and 1 PersistentVolume in the examples, got %v", count)
	}
}

// TestVolumeAttributesParse runs the driver's parser on every StorageClass
// and PersistentVolume of Basin, with the secrets they reference.
func TestVolumeAttributesParse(t *testing.T) {
	for _, err := range checkAttributes(loadManifests(t)) {
		t.Error(err)
	}
}

func TestExamplesUseHostToContainer(t *testing.T) {
	docs := under(loadManifests(t), "examples")
	if len(podSpecs(docs)) == 0 {
		t.Fatal("no workloads in examples/")
	}
	for _, err := range checkMountPropagation(docs) {
		t.Error(err)
	}
}

func TestImagesPinned(t *testing.T) {
	for _, err := range checkImages(loadManifests(t)) {
		t.Error(err)
	}
}

// TestChecksCatchMistakes feeds the checks broken manifests, so that a
// check that stopped checking cannot pass unnoticed.
func TestChecksCatchMistakes(t *testing.T) {
	const secret = `
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: basin-system}
stringData: {accessKeyID: a, secretAccessKey: b}
`
	const sc = `
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: sc}
provisioner: basin.csi.dev
parameters:
  bucket: b1-data
  csi.storage.k8s.io/provisioner-secret-name: creds
  csi.storage.k8s.io/provisioner-secret-namespace: basin-system
`
	const pv = `
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadOnlyMany]
  csi:
    driver: basin.csi.dev
    volumeHandle: pv
    volumeAttributes: {bucket: data-set, metadataTTL: "-1"}
`
	const pod = `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
    - name: c
      image: busybox:1.37
      volumeMounts: [{name: v, mountPath: /v, mountPropagation: HostToContainer}]
  volumes: [{name: v, persistentVolumeClaim: {claimName: c}}]
`
	tests := []struct {
		name   string
		yaml   string
		decode bool // want a decoding error rather than a check error
	}{
		{"valid", secret + "---" + sc + "---" + pv + "---" + pod, false},
		{"unknown field", pod + "  restartPolicyy: Never\n", true},
		{"unknown kind", "apiVersion: v1\nkind: Gadget\nmetadata: {name: g}\n", true},
		{"duplicate field", strings.Replace(sc, "provisioner: basin.csi.dev", "provisioner: basin.csi.dev\nprovisioner: other", 1), true},
		{"bool where a string belongs", strings.Replace(sc, "bucket: b1-data", "bucket: b1-data\n  pathStyle: true", 1), true},
		{"unknown attribute", secret + "---" + strings.Replace(sc, "bucket: b1-data", "bucket: b1-data\n  cacheSizee: 1Gi", 1), false},
		{"bad attribute value", strings.Replace(pv, `metadataTTL: "-1"`, `metadataTTL: "forever"`, 1), false},
		{"unknown secret key", strings.Replace(secret, "accessKeyID", "accessKeyId", 1) + "---" + sc, false},
		{"missing secret", sc, false},
		{"PV without bucket", strings.Replace(pv, "bucket: data-set, ", "", 1), false},
		{"no HostToContainer", strings.Replace(pod, ", mountPropagation: HostToContainer", "", 1), false},
		{"unpinned image", strings.Replace(pod, "busybox:1.37", "busybox", 1), false},
	}
	dec, err := strictDecoder()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, decErr := decodeDocuments(dec, filepath.Join("examples", "x.yaml"), []byte(tt.yaml))
			checkErr := errors.Join(append(append(checkAttributes(docs), checkMountPropagation(docs)...), checkImages(docs)...)...)
			switch {
			case tt.name == "valid":
				if decErr != nil || checkErr != nil {
					t.Fatalf("valid manifests rejected: %v %v", decErr, checkErr)
				}
			case tt.decode && decErr == nil:
				t.Fatal("decoded without error")
			case !tt.decode && decErr != nil:
				t.Fatalf("decoding failed, want it to pass and a check to fail: %v", decErr)
			case !tt.decode && checkErr == nil:
				t.Fatal("no check failed")
			}
			t.Logf("decode: %v; checks: %v", decErr, checkErr)
			if checkErr != nil && strings.Contains(tt.name, "attribute") && !errors.Is(checkErr, volumeattr.ErrInvalid) {
				t.Errorf("want volumeattr.ErrInvalid, got %v", checkErr)
			}
		})
	}
}
