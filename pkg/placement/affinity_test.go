package placement

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

func TestPreferNodesKeepsThePodsAffinity(t *testing.T) {
	required := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "gpu", Operator: corev1.NodeSelectorOpExists}}}}}
	own := corev1.PreferredSchedulingTerm{Weight: 7, Preference: corev1.NodeSelectorTerm{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}
	podAff := &corev1.PodAffinity{}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{
		NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required.DeepCopy(),
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{own}},
		PodAffinity: podAff,
	}}}
	ws := []nodeWeight{{node: "n1", weight: 100}, {node: "n2", weight: 30}}
	preferNodes(pod, ws)
	preferNodes(pod, ws) // a second pass adds nothing
	na := pod.Spec.Affinity.NodeAffinity
	if !equality.Semantic.DeepEqual(na.RequiredDuringSchedulingIgnoredDuringExecution, required) {
		t.Errorf("required terms changed: %+v", na.RequiredDuringSchedulingIgnoredDuringExecution)
	}
	if pod.Spec.Affinity.PodAffinity != podAff {
		t.Error("pod affinity replaced")
	}
	terms := na.PreferredDuringSchedulingIgnoredDuringExecution
	if len(terms) != 3 || !equality.Semantic.DeepEqual(terms[0], own) {
		t.Fatalf("preferred terms %+v, want the pod's own first and two of ours", terms)
	}
	for i, w := range ws {
		got := terms[i+1]
		f := got.Preference.MatchFields
		if got.Weight != w.weight || len(f) != 1 || f[0].Key != "metadata.name" || f[0].Operator != corev1.NodeSelectorOpIn || len(f[0].Values) != 1 || f[0].Values[0] != w.node {
			t.Errorf("term %d = %+v, want weight %d for %s", i+1, got, w.weight, w.node)
		}
		if len(got.Preference.MatchExpressions) != 0 {
			t.Errorf("term %d has match expressions", i+1)
		}
	}
}

func TestPreferNodesWithoutAffinity(t *testing.T) {
	pod := &corev1.Pod{}
	preferNodes(pod, []nodeWeight{{node: "n1", weight: 5}})
	if pod.Spec.Affinity == nil || len(pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Fatalf("affinity %+v", pod.Spec.Affinity)
	}
	if pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		t.Error("a required term appeared")
	}
}
