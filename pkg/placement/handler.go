package placement

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
	"github.com/basin-csi/basin/pkg/driver/volumeattr"
)

// volumeIndex is the field index of VolumeCache objects by their
// LabelVolume label (setup.go registers it with the manager's cache).
const volumeIndex = "placement.basin.csi.dev/volume"

// Outcomes of a decision (the outcome label of the decisions metric).
const (
	OutcomePreferred    = "preferred"  // terms added
	OutcomeNoVolume     = "no_volume"  // no Basin volume: pod untouched
	OutcomeOptedOut     = "opted_out"  // by the pod's label or the volumes' attribute
	OutcomeUnbound      = "unbound"    // a claim is not bound yet (WaitForFirstConsumer)
	OutcomeNotCached    = "not_cached" // no node holds any of the volumes
	OutcomeError        = "error"      // reading the API failed: no preference
	OutcomeNotPodCreate = "ignored"    // not a pod CREATE (misconfigured rules)
)

// Handler is the admission.Handler of the webhook. It reads claims,
// volumes and VolumeCaches through Reader (the manager's cache).
type Handler struct {
	// constant
	Reader     client.Reader
	DriverName string
	Metrics    *Metrics // nil: none
}

// decision is what the webhook decided for one pod.
type decision struct {
	outcome string
	reason  string // the annotation; "" leaves the pod untouched
	weights []nodeWeight
}

// Handle implements admission.Handler. It never denies: every failure
// admits the pod unchanged but for the annotation saying why.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	if req.Kind.Kind != "Pod" || req.Operation != "CREATE" {
		h.Metrics.observe(OutcomeNotPodCreate, start)
		return admission.Allowed("")
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		h.Metrics.fail("decode")
		h.Metrics.observe(OutcomeError, start)
		klog.ErrorS(err, "placement: pod does not decode; admitted unchanged")
		return admission.Allowed("")
	}
	d := h.decide(ctx, req.Namespace, &pod)
	h.Metrics.observe(d.outcome, start)
	if d.reason == "" {
		return admission.Allowed("")
	}
	klog.V(2).InfoS("placement", "pod", klog.KRef(req.Namespace, podName(&pod)), "outcome", d.outcome, "reason", d.reason)
	mutated := pod.DeepCopy()
	if mutated.Annotations == nil {
		mutated.Annotations = map[string]string{}
	}
	mutated.Annotations[basinv1.AnnotationCacheAffinity] = d.reason
	if len(d.weights) > 0 {
		preferNodes(mutated, d.weights)
	}
	raw, err := json.Marshal(mutated)
	if err != nil {
		h.Metrics.fail("encode")
		return admission.Allowed("")
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, raw)
}

// decide follows the pod's claims to their volumes and caches.
func (h *Handler) decide(ctx context.Context, ns string, pod *corev1.Pod) decision {
	if pod.Labels[basinv1.LabelCacheAffinity] == "false" {
		return decision{outcome: OutcomeOptedOut, reason: "opted out by the pod (label " + basinv1.LabelCacheAffinity + `: "false")`}
	}
	var volumes, optedOut, unbound []string
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		claim := v.PersistentVolumeClaim.ClaimName
		pv, err := h.volumeOf(ctx, ns, claim)
		switch {
		case apierrors.IsNotFound(err):
			// A claim made after the pod, or a PV that is gone: the
			// scheduler waits for it; no preference from us.
			unbound = append(unbound, claim)
			continue
		case err != nil:
			h.Metrics.fail("read")
			return decision{outcome: OutcomeError, reason: "no preference: " + err.Error()}
		case pv == nil:
			unbound = append(unbound, claim)
			continue
		case pv.Spec.CSI == nil || pv.Spec.CSI.Driver != h.DriverName:
			continue
		case !cacheAffinity(pv):
			optedOut = append(optedOut, pv.Name)
			continue
		}
		if !slices.Contains(volumes, pv.Name) {
			volumes = append(volumes, pv.Name)
		}
	}
	if len(volumes) == 0 {
		switch {
		case len(optedOut) > 0:
			return decision{outcome: OutcomeOptedOut, reason: fmt.Sprintf("opted out by the volume (%s: %q on %s)", volumeattr.KeyCacheAffinity, "false", strings.Join(optedOut, ", "))}
		case len(unbound) > 0:
			return decision{outcome: OutcomeUnbound, reason: fmt.Sprintf("no preference: claim %s not bound yet (the scheduler binds it)", strings.Join(unbound, ", "))}
		}
		return decision{outcome: OutcomeNoVolume}
	}
	caches := make([][]basinv1.VolumeCache, len(volumes))
	for i, vol := range volumes {
		var list basinv1.VolumeCacheList
		if err := h.Reader.List(ctx, &list, client.MatchingFields{volumeIndex: vol}); err != nil {
			h.Metrics.fail("read")
			return decision{outcome: OutcomeError, reason: "no preference: " + err.Error()}
		}
		caches[i] = list.Items
	}
	ws := weigh(volumes, caches)
	if len(ws) == 0 {
		return decision{outcome: OutcomeNotCached, reason: "no node holds " + strings.Join(volumes, " or ")}
	}
	return decision{outcome: OutcomePreferred, reason: preferredReason(ws), weights: ws}
}

// volumeOf returns the volume bound to claim, nil while it is unbound.
func (h *Handler) volumeOf(ctx context.Context, ns, claim string) (*corev1.PersistentVolume, error) {
	var pvc corev1.PersistentVolumeClaim
	if err := h.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim}, &pvc); err != nil {
		return nil, err
	}
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound {
		return nil, nil
	}
	var pv corev1.PersistentVolume
	if err := h.Reader.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, &pv); err != nil {
		return nil, err
	}
	return &pv, nil
}

// cacheAffinity reads the volume's opt-out with the attribute parser; a
// value the parser refuses (the volume would not mount either) counts as
// not opted out.
func cacheAffinity(pv *corev1.PersistentVolume) bool {
	v, ok := pv.Spec.CSI.VolumeAttributes[volumeattr.KeyCacheAffinity]
	if !ok {
		return true
	}
	a, err := volumeattr.Parse(map[string]string{volumeattr.KeyCacheAffinity: v}, nil)
	return err != nil || a.CacheAffinity
}

func podName(p *corev1.Pod) string {
	if p.Name != "" {
		return p.Name
	}
	return p.GenerateName
}
