package warmupctl

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
)

// unschedulableLimit is how long a node's pod may stay unschedulable
// before the node counts as failed.
const unschedulableLimit = 5 * time.Minute

// progress is what a running pod's node cache held when the controller
// first saw the pod running: the base of its rate.
type progress struct {
	Bytes int64
	At    time.Time
}

// nodeFromPod is a node's entry after looking at its pod (nil: not
// created yet, or gone). cache is the node's VolumeCache, if any; base is
// the first progress seen for this pod (for the rate while it runs).
func nodeFromPod(prev basinv1.WarmupNodeStatus, pod *corev1.Pod, cache *basinv1.VolumeCache, base *progress, now time.Time) basinv1.WarmupNodeStatus {
	n := basinv1.WarmupNodeStatus{NodeName: prev.NodeName, PodName: prev.PodName, Phase: basinv1.WarmupPending, Fits: basinv1.FitsUnknown}
	if ended(prev.Phase) || pod == nil {
		return prev
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		n.Phase = basinv1.WarmupComplete
		if pod.Status.Phase == corev1.PodFailed {
			n.Phase = basinv1.WarmupFailed
		}
		term := terminated(pod)
		msg := ""
		if term != nil {
			msg = term.Message
		}
		reported := applyReport(&n, msg)
		switch {
		case reported:
		case term != nil:
			n.Message = fmt.Sprintf("no result (exit code %d, %s): %s", term.ExitCode, term.Reason, truncate(msg, 200))
		default:
			n.Message = fmt.Sprintf("no result: pod %s: %s", pod.Status.Reason, pod.Status.Message)
		}
		if n.Phase == basinv1.WarmupComplete && !reported {
			n.Phase = basinv1.WarmupFailed
		}
	case corev1.PodRunning:
		n.Phase = basinv1.WarmupRunning
		n.Message = "running"
		if cache != nil {
			// Progress: the node's cache of the volume, as its node plugin
			// last reported it (files: objects with data).
			n.Files, n.Bytes = cache.Status.CachedObjects, cache.Status.CachedBytes
			if base != nil && now.Sub(base.At) > 0 {
				n.BytesPerSecond = max(0, int64(float64(n.Bytes-base.Bytes)/now.Sub(base.At).Seconds()))
			}
			n.Message = "running; files and bytes are what the node's cache holds of the volume (VolumeCache " + cache.Name + ")"
		}
	default:
		n.Message = "pod pending"
		for _, c := range pod.Status.Conditions {
			if c.Type != corev1.PodScheduled || c.Status != corev1.ConditionFalse {
				continue
			}
			n.Message = fmt.Sprintf("pod not scheduled: %s: %s", c.Reason, c.Message)
			// A node that cannot take the pod (full, tainted, gone) must
			// not keep the run from ending.
			if since := now.Sub(c.LastTransitionTime.Time); since >= unschedulableLimit {
				n.Phase = basinv1.WarmupFailed
				n.Message = fmt.Sprintf("pod not scheduled for %s: %s: %s", since.Round(time.Second), c.Reason, c.Message)
			}
		}
	}
	return n
}

// terminated is the state of the pod's warmup container once it ended.
func terminated(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Terminated != nil {
			return cs.State.Terminated
		}
	}
	return nil
}

// ended: a node's or a run's phase is final.
func ended(phase string) bool {
	return phase == basinv1.WarmupComplete || phase == basinv1.WarmupFailed
}

// fold sums the node entries into s: the sums, NodesSummary, Fits, Phase
// and the conditions (for generation gen). It reports whether the run
// has ended (every node's pod ended). A run without nodes yet stays
// Pending.
func fold(s *basinv1.WarmupStatus, gen int64) (done bool) {
	s.Files, s.Bytes, s.BytesPerSecond = 0, 0, 0
	var complete, failed, running, yes, no int
	var failedNodes []string
	for _, n := range s.Nodes {
		s.Files += n.Files
		s.Bytes += n.Bytes
		s.BytesPerSecond += n.BytesPerSecond
		switch n.Phase {
		case basinv1.WarmupComplete:
			complete++
		case basinv1.WarmupFailed:
			failed++
			failedNodes = append(failedNodes, n.NodeName)
		case basinv1.WarmupRunning:
			running++
		}
		switch n.Fits {
		case basinv1.FitsYes:
			yes++
		case basinv1.FitsNo:
			no++
		}
	}
	s.Size = basinv1.FormatSize(s.Bytes)
	s.NodesSummary = fmt.Sprintf("%d/%d", complete, len(s.Nodes))
	switch {
	case no > 0:
		s.Fits = basinv1.FitsNo
	case yes > 0 && yes == complete+failed:
		s.Fits = basinv1.FitsYes
	default:
		s.Fits = basinv1.FitsUnknown
	}
	done = len(s.Nodes) > 0 && complete+failed == len(s.Nodes)
	switch {
	case done && failed > 0:
		s.Phase = basinv1.WarmupFailed
	case done:
		s.Phase = basinv1.WarmupComplete
	case running+complete+failed > 0:
		s.Phase = basinv1.WarmupRunning
	default:
		s.Phase = basinv1.WarmupPending
	}

	cond := func(t string, st metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: t, Status: st, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	switch s.Phase {
	case basinv1.WarmupComplete:
		cond(basinv1.ConditionComplete, metav1.ConditionTrue, "Loaded",
			fmt.Sprintf("run %d loaded %d files (%s) on %d nodes", s.Runs, s.Files, s.Size, len(s.Nodes)))
	case basinv1.WarmupFailed:
		cond(basinv1.ConditionComplete, metav1.ConditionFalse, "NodeFailed", fmt.Sprintf("run %d failed", s.Runs))
	default:
		cond(basinv1.ConditionComplete, metav1.ConditionFalse, s.Phase, fmt.Sprintf("run %d: %s nodes loaded", s.Runs, s.NodesSummary))
	}
	if failed > 0 {
		cond(basinv1.ConditionFailed, metav1.ConditionTrue, "NodeFailed", "failed on "+strings.Join(failedNodes, ", "))
	} else {
		cond(basinv1.ConditionFailed, metav1.ConditionFalse, s.Phase, "no node failed")
	}
	switch s.Fits {
	case basinv1.FitsYes:
		cond(basinv1.ConditionFits, metav1.ConditionTrue, "Fits", "the data fits the cache of every node that reported")
	case basinv1.FitsNo:
		cond(basinv1.ConditionFits, metav1.ConditionFalse, "DoesNotFit", "the data does not fit the cache of a node; see status.nodes")
	default:
		cond(basinv1.ConditionFits, metav1.ConditionUnknown, "NotReported", "no node reported whether the data fits its cache")
	}
	return done
}

// truncate cuts s to n bytes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
