package warmupctl

import (
	"errors"
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
)

// node is a Ready, schedulable node with labels.
func node(name string, labels map[string]string, edit ...func(*corev1.Node)) corev1.Node {
	n := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	for _, e := range edit {
		e(&n)
	}
	return n
}

func jobOn(parallelism int32, selector map[string]string, terms ...corev1.NodeSelectorTerm) *batchv1.Job {
	j := &batchv1.Job{Spec: batchv1.JobSpec{Parallelism: ptr.To(parallelism)}}
	j.Spec.Template.Spec.NodeSelector = selector
	if len(terms) > 0 {
		j.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
		}}
	}
	return j
}

func TestChooseNodes(t *testing.T) {
	gpu := map[string]string{"gpu": "true", "zone": "a"}
	cpu := map[string]string{"zone": "b"}
	nodes := []corev1.Node{
		node("n1", gpu), node("n2", gpu), node("n3", cpu), node("n4", gpu),
		node("cordoned", gpu, func(n *corev1.Node) { n.Spec.Unschedulable = true }),
		node("notready", gpu, func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }),
		node("tainted", gpu, func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}}
		}),
		node("soft", cpu, func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectPreferNoSchedule}}
		}),
	}
	cached := map[string]int64{"n4": 900, "n2": 100, "tainted": 5000}
	tolerate := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ml", Effect: corev1.TaintEffectNoSchedule}}
	inZoneA := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}
	byName := corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n3"}}}}
	for _, tc := range []struct {
		name        string
		spec        basinv1.WarmupNodes
		job         *batchv1.Job
		tolerations []corev1.Toleration
		want        []string
		wantErr     error
	}{
		{name: "every usable node, warmest first", want: []string{"n4", "n2", "n1", "n3", "soft"}},
		{name: "count prefers the warm", spec: basinv1.WarmupNodes{Count: ptr.To[int32](2)}, want: []string{"n4", "n2"}},
		{name: "selector", spec: basinv1.WarmupNodes{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "b"}}}, want: []string{"n3", "soft"}},
		{name: "tolerated taint", spec: basinv1.WarmupNodes{Count: ptr.To[int32](1)}, tolerations: tolerate, want: []string{"tainted"}},
		{name: "job: selector and parallelism", spec: basinv1.WarmupNodes{JobName: "train"}, job: jobOn(2, map[string]string{"gpu": "true"}), want: []string{"n4", "n2"}},
		{name: "job: count overrides parallelism", spec: basinv1.WarmupNodes{JobName: "train", Count: ptr.To[int32](3)}, job: jobOn(1, map[string]string{"gpu": "true"}), want: []string{"n4", "n2", "n1"}},
		{name: "job: affinity terms are ORed", spec: basinv1.WarmupNodes{JobName: "train"}, job: jobOn(10, nil, byName, inZoneA), want: []string{"n4", "n2", "n1", "n3"}},
		{name: "job: affinity NotIn", spec: basinv1.WarmupNodes{JobName: "train"}, job: jobOn(10, nil, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "gpu", Operator: corev1.NodeSelectorOpDoesNotExist}}}), want: []string{"n3", "soft"}},
		{name: "job: empty term matches nothing", spec: basinv1.WarmupNodes{JobName: "train"}, job: jobOn(1, nil, corev1.NodeSelectorTerm{}), wantErr: ErrNoNodes},
		{name: "nothing matches", spec: basinv1.WarmupNodes{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "z"}}}, wantErr: ErrNoNodes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := chooseNodes(tc.spec, nodeChoice{Nodes: nodes, Cached: cached, Job: tc.job, Tolerations: tc.tolerations})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("chose %v, want %v", got, tc.want)
			}
		})
	}
}

func TestChooseNodesJobMissing(t *testing.T) {
	if _, err := chooseNodes(basinv1.WarmupNodes{JobName: "gone"}, nodeChoice{Nodes: []corev1.Node{node("n1", nil)}}); err == nil {
		t.Error("a missing Job chose nodes")
	}
}
