package warmupctl

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/klog/v2"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
)

// ErrNoNodes: no schedulable, Ready node matches the Warmup's choice.
var ErrNoNodes = errors.New("warmupctl: no node to load")

// nodeChoice is what chooseNodes needs besides the spec.
type nodeChoice struct {
	// Nodes are the cluster's nodes.
	Nodes []corev1.Node
	// Cached is the volume's bytes in each node's cache (VolumeCache),
	// by node name; nodes without an entry hold nothing known.
	Cached map[string]int64
	// Job is spec.nodes.jobName's Job, if set.
	Job *batchv1.Job
	// Tolerations are the warmup pods' (spec.tolerations).
	Tolerations []corev1.Toleration
}

// chooseNodes returns the names of the nodes to load: those spec allows
// (its selector, or its Job's node selector and required node affinity)
// that are Ready, schedulable and whose NoSchedule/NoExecute taints the
// warmup pods tolerate; the ones holding most of the volume first, then by
// name; at most spec.Count (for a Job without Count, its parallelism).
func chooseNodes(spec basinv1.WarmupNodes, c nodeChoice) ([]string, error) {
	match := func(*corev1.Node) bool { return true }
	limit := -1
	switch {
	case spec.Selector != nil:
		sel, err := metav1.LabelSelectorAsSelector(spec.Selector)
		if err != nil {
			return nil, fmt.Errorf("warmupctl: spec.nodes.selector: %w", err)
		}
		match = func(n *corev1.Node) bool { return sel.Matches(labels.Set(n.Labels)) }
	case spec.JobName != "":
		if c.Job == nil {
			return nil, fmt.Errorf("warmupctl: job %q not found", spec.JobName)
		}
		tmpl := c.Job.Spec.Template.Spec
		match = func(n *corev1.Node) bool { return podAllows(&tmpl, n) }
		limit = 1
		if p := c.Job.Spec.Parallelism; p != nil {
			limit = int(*p)
		}
	}
	if spec.Count != nil {
		limit = int(*spec.Count)
	}
	var chosen []*corev1.Node
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if usable(n, c.Tolerations) && match(n) {
			chosen = append(chosen, n)
		}
	}
	if len(chosen) == 0 {
		return nil, ErrNoNodes
	}
	slices.SortFunc(chosen, func(a, b *corev1.Node) int {
		if d := cmp.Compare(c.Cached[b.Name], c.Cached[a.Name]); d != 0 {
			return d
		}
		return cmp.Compare(a.Name, b.Name)
	})
	if limit >= 0 && limit < len(chosen) {
		chosen = chosen[:limit]
	}
	names := make([]string, len(chosen))
	for i, n := range chosen {
		names[i] = n.Name
	}
	return names, nil
}

// usable: n is Ready, schedulable, and tolerations tolerate its taints
// that keep pods off (NoSchedule, NoExecute).
func usable(n *corev1.Node, tolerations []corev1.Toleration) bool {
	if n.Spec.Unschedulable {
		return false
	}
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		return false
	}
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !slices.ContainsFunc(tolerations, func(tol corev1.Toleration) bool {
			return tol.ToleratesTaint(klog.Background(), t, false)
		}) {
			return false
		}
	}
	return true
}

// podAllows: a pod of spec may run on n as far as its node selector and
// required node affinity say.
func podAllows(spec *corev1.PodSpec, n *corev1.Node) bool {
	if !labels.SelectorFromSet(spec.NodeSelector).Matches(labels.Set(n.Labels)) {
		return false
	}
	a := spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	// The terms are ORed; an empty term matches nothing.
	return slices.ContainsFunc(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms,
		func(term corev1.NodeSelectorTerm) bool { return termMatches(term, n) })
}

// termMatches: every requirement of term (ANDed) holds for n.
func termMatches(term corev1.NodeSelectorTerm, n *corev1.Node) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	for _, r := range term.MatchExpressions {
		if !requirementHolds(r, labels.Set(n.Labels)) {
			return false
		}
	}
	for _, r := range term.MatchFields {
		if r.Key != "metadata.name" || !requirementHolds(r, labels.Set{"metadata.name": n.Name}) {
			return false
		}
	}
	return true
}

// labelOp is the label selector operator of a node selector operator.
func labelOp(op corev1.NodeSelectorOperator) (selection.Operator, bool) {
	switch op {
	case corev1.NodeSelectorOpIn:
		return selection.In, true
	case corev1.NodeSelectorOpNotIn:
		return selection.NotIn, true
	case corev1.NodeSelectorOpExists:
		return selection.Exists, true
	case corev1.NodeSelectorOpDoesNotExist:
		return selection.DoesNotExist, true
	case corev1.NodeSelectorOpGt:
		return selection.GreaterThan, true
	case corev1.NodeSelectorOpLt:
		return selection.LessThan, true
	}
	return "", false
}

// requirementHolds: r holds for set; an invalid requirement holds for
// nothing (the scheduler would not place the Job's pods either).
func requirementHolds(r corev1.NodeSelectorRequirement, set labels.Set) bool {
	op, ok := labelOp(r.Operator)
	if !ok {
		return false
	}
	req, err := labels.NewRequirement(r.Key, op, r.Values)
	return err == nil && req.Matches(set)
}
