package placement

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	jsonpatch5 "github.com/evanphx/json-patch/v5"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
)

const driver = "basin.csi.dev"

func claim(name, volume string) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}}
	if volume != "" {
		c.Status.Phase = corev1.ClaimBound
	}
	return c
}

func volume(name, drv string, attrs map[string]string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
			CSI: &corev1.CSIPersistentVolumeSource{Driver: drv, VolumeHandle: name, VolumeAttributes: attrs}}}}
}

func cache(vol, node string, percent int32) *basinv1.VolumeCache {
	c := vc(vol, node, 1<<20, pct(percent))
	c.Name = vol + "." + node
	c.Labels = map[string]string{basinv1.LabelVolume: vol, basinv1.LabelNode: node}
	return &c
}

// fakeClient is a fake API client holding objs, with the VolumeCache
// index of Setup.
func fakeClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, basinv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return fake.NewClientBuilder().WithScheme(s).WithIndex(&basinv1.VolumeCache{}, volumeIndex, cacheVolume).WithObjects(objs...).Build()
}

func testHandler(t *testing.T, objs ...client.Object) *Handler {
	t.Helper()
	return &Handler{Reader: fakeClient(t, objs...), DriverName: driver}
}

// admit runs the handler on a pod of claims and returns the pod as
// patched (nil when the response holds no patch).
func admit(t *testing.T, h *Handler, labels map[string]string, claims ...string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: labels}}
	for _, c := range claims {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: c, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	resp := h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Operation: admissionv1.Create, Namespace: "ns",
		Object: runtime.RawExtension{Raw: raw}}})
	if !resp.Allowed {
		t.Fatalf("denied: %+v", resp.Result)
	}
	if len(resp.Patches) == 0 {
		return nil
	}
	patched, err := applyPatch(raw, resp.Patches)
	if err != nil {
		t.Fatal(err)
	}
	return patched
}

func applyPatch(raw []byte, ops []jsonpatch.JsonPatchOperation) (*corev1.Pod, error) {
	b, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	p, err := jsonpatch5.DecodePatch(b)
	if err != nil {
		return nil, err
	}
	out, err := p.Apply(raw)
	if err != nil {
		return nil, err
	}
	var pod corev1.Pod
	return &pod, json.Unmarshal(out, &pod)
}

func preferred(p *corev1.Pod) map[string]int32 {
	out := map[string]int32{}
	if p == nil || p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil {
		return out
	}
	for _, term := range p.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		out[term.Preference.MatchFields[0].Values[0]] = term.Weight
	}
	return out
}

func TestHandle(t *testing.T) {
	objs := []client.Object{
		claim("data", "pv-data"), volume("pv-data", driver, nil),
		cache("pv-data", "n1", 100), cache("pv-data", "n2", 30),
		claim("more", "pv-more"), volume("pv-more", driver, map[string]string{"cacheAffinity": "true"}), cache("pv-more", "n2", 100),
		claim("optout", "pv-optout"), volume("pv-optout", driver, map[string]string{"cacheAffinity": "false"}), cache("pv-optout", "n1", 100),
		claim("cold", "pv-cold"), volume("pv-cold", driver, nil),
		claim("other", "pv-other"), volume("pv-other", "ebs.csi.aws.com", nil), cache("pv-other", "n1", 100),
		claim("pending", ""),
	}
	cases := []struct {
		name    string
		labels  map[string]string
		claims  []string
		why     string // annotation prefix; "" means no patch at all
		weights map[string]int32
	}{
		{"one volume", nil, []string{"data"}, "preferred n1 (weight 100: 100% of pv-data cached), n2 (weight 30", map[string]int32{"n1": 100, "n2": 30}},
		{"two volumes", nil, []string{"data", "more"}, "preferred n2 (weight 65", map[string]int32{"n1": 50, "n2": 65}},
		{"same claim twice", nil, []string{"data", "data"}, "preferred n1 (weight 100", map[string]int32{"n1": 100, "n2": 30}},
		{"opted out by the pod", map[string]string{basinv1.LabelCacheAffinity: "false"}, []string{"data"}, "opted out by the pod", map[string]int32{}},
		{"opted out by the volume", nil, []string{"optout"}, "opted out by the volume (cacheAffinity: \"false\" on pv-optout)", map[string]int32{}},
		{"opted-out volume beside a cached one", nil, []string{"optout", "data"}, "preferred n1", map[string]int32{"n1": 100, "n2": 30}},
		{"not cached anywhere", nil, []string{"cold"}, "no node holds pv-cold", map[string]int32{}},
		{"unbound claim", nil, []string{"pending"}, "no preference: claim pending not bound yet", map[string]int32{}},
		{"missing claim", nil, []string{"nosuch"}, "no preference: claim nosuch not bound yet", map[string]int32{}},
		{"another driver", nil, []string{"other"}, "", map[string]int32{}},
		{"no claim", nil, nil, "", map[string]int32{}},
	}
	h := testHandler(t, objs...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := admit(t, h, c.labels, c.claims...)
			if c.why == "" {
				if p != nil {
					t.Fatalf("patched a pod it should leave alone: %+v", p.Annotations)
				}
				return
			}
			if p == nil {
				t.Fatal("no patch")
			}
			if why := p.Annotations[basinv1.AnnotationCacheAffinity]; !strings.HasPrefix(why, c.why) {
				t.Errorf("annotation %q, want prefix %q", why, c.why)
			}
			got := preferred(p)
			if len(got) != len(c.weights) {
				t.Fatalf("preferences %v, want %v", got, c.weights)
			}
			for n, w := range c.weights {
				if got[n] != w {
					t.Errorf("weight of %s = %d, want %d", n, got[n], w)
				}
			}
		})
	}
}

func TestHandleIgnoresOtherRequests(t *testing.T) {
	h := testHandler(t)
	resp := h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Operation: admissionv1.Update}})
	if !resp.Allowed || len(resp.Patches) != 0 {
		t.Errorf("UPDATE: %+v", resp)
	}
	resp = h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte("{")}}})
	if !resp.Allowed || len(resp.Patches) != 0 {
		t.Errorf("bad object: %+v", resp)
	}
}
