package placement

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// preferNodes adds one preferred node-affinity term per node weight to
// pod, after the pod's own terms, which stay as written (required terms,
// preferred terms, pod affinities). A term equal to one the pod already
// has is not added twice.
func preferNodes(pod *corev1.Pod, ws []nodeWeight) {
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := pod.Spec.Affinity.NodeAffinity
	for _, w := range ws {
		term := corev1.PreferredSchedulingTerm{
			Weight: w.weight,
			Preference: corev1.NodeSelectorTerm{
				MatchFields: []corev1.NodeSelectorRequirement{{
					Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{w.node},
				}},
			},
		}
		if !hasTerm(na.PreferredDuringSchedulingIgnoredDuringExecution, term) {
			na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution, term)
		}
	}
}

func hasTerm(terms []corev1.PreferredSchedulingTerm, t corev1.PreferredSchedulingTerm) bool {
	for _, have := range terms {
		if equality.Semantic.DeepEqual(have, t) {
			return true
		}
	}
	return false
}
