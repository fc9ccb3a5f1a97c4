package warmupctl

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
)

// endedPod is a pod whose container ended with code and message.
func endedPod(phase corev1.PodPhase, code int32, msg string) *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "warmup", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Completed", Message: msg}},
	}}}}
}

// unschedulable is a pending pod the scheduler could not place since.
func unschedulable(since time.Time) *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes are available",
		LastTransitionTime: metav1.Time{Time: since},
	}}}}
}

func TestNodeFromPod(t *testing.T) {
	now := time.Unix(1000, 0)
	prev := basinv1.WarmupNodeStatus{NodeName: "n1", PodName: "p", Phase: basinv1.WarmupPending}
	cache := &basinv1.VolumeCache{ObjectMeta: metav1.ObjectMeta{Name: "vc"}, Status: basinv1.VolumeCacheStatus{CachedBytes: 3000, CachedObjects: 7}}
	for _, tc := range []struct {
		name  string
		prev  basinv1.WarmupNodeStatus
		pod   *corev1.Pod
		cache *basinv1.VolumeCache
		base  *progress
		want  basinv1.WarmupNodeStatus
	}{
		{name: "no pod yet", prev: prev, want: prev},
		{name: "pending", prev: prev, pod: &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}},
			want: basinv1.WarmupNodeStatus{NodeName: "n1", PodName: "p", Phase: basinv1.WarmupPending, Fits: "Unknown", Message: "pod pending"}},
		{name: "unschedulable for a while", prev: prev, pod: unschedulable(now.Add(-time.Minute)),
			want: basinv1.WarmupNodeStatus{NodeName: "n1", PodName: "p", Phase: basinv1.WarmupPending, Fits: "Unknown", Message: "pod not scheduled: Unschedulable: 0/1 nodes are available"}},
		{name: "unschedulable too long", prev: prev, pod: unschedulable(now.Add(-unschedulableLimit)),
			want: basinv1.WarmupNodeStatus{NodeName: "n1", PodName: "p", Phase: basinv1.WarmupFailed, Fits: "Unknown", Message: "pod not scheduled for 5m0s: Unschedulable: 0/1 nodes are available"}},
		{name: "running without VolumeCache", prev: prev, pod: &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}},
			want: basinv1.WarmupNodeStatus{NodeName: "n1", PodName: "p", Phase: basinv1.WarmupRunning, Fits: "Unknown", Message: "running"}},
		{name: "running: the cache's growth", prev: prev, pod: &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}},
			cache: cache, base: &progress{Bytes: 1000, At: now.Add(-2 * time.Second)},
			want: basinv1.WarmupNodeStatus{NodeName: "n1", PodName: "p", Phase: basinv1.WarmupRunning, Fits: "Unknown", Files: 7, Bytes: 3000, BytesPerSecond: 1000,
				Message: "running; files and bytes are what the node's cache holds of the volume (VolumeCache vc)"}},
		{name: "succeeded with a report", prev: prev,
			pod:  endedPod(corev1.PodSucceeded, 0, `{"files":5,"bytes":500,"bytesPerSecond":50,"errors":0,"fits":"Yes","verdict":"fits: ..."}`),
			want: basinv1.WarmupNodeStatus{NodeName: "n1", PodName: "p", Phase: basinv1.WarmupComplete, Files: 5, Bytes: 500, BytesPerSecond: 50, Fits: "Yes", Message: "fits: ..."}},
		{name: "failed with a report", prev: prev,
			pod:  endedPod(corev1.PodFailed, 1, `{"files":4,"bytes":400,"errors":1,"fits":"No","verdict":"does NOT fit"}`),
			want: basinv1.WarmupNodeStatus{NodeName: "n1", PodName: "p", Phase: basinv1.WarmupFailed, Files: 4, Bytes: 400, Errors: 1, Fits: "No", Message: "does NOT fit"}},
		{name: "succeeded without a report fails", prev: prev, pod: endedPod(corev1.PodSucceeded, 0, "garbage"),
			want: basinv1.WarmupNodeStatus{NodeName: "n1", PodName: "p", Phase: basinv1.WarmupFailed, Fits: "Unknown", Message: "no result (exit code 0, Completed): garbage"}},
		{name: "an ended node stays", prev: basinv1.WarmupNodeStatus{NodeName: "n1", Phase: basinv1.WarmupComplete, Files: 1},
			pod: &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, want: basinv1.WarmupNodeStatus{NodeName: "n1", Phase: basinv1.WarmupComplete, Files: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nodeFromPod(tc.prev, tc.pod, tc.cache, tc.base, now); got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestFold(t *testing.T) {
	done := func(node, fits string, files, bytes int64) basinv1.WarmupNodeStatus {
		return basinv1.WarmupNodeStatus{NodeName: node, Phase: basinv1.WarmupComplete, Fits: fits, Files: files, Bytes: bytes, BytesPerSecond: bytes / 10}
	}
	failed := basinv1.WarmupNodeStatus{NodeName: "bad", Phase: basinv1.WarmupFailed, Fits: basinv1.FitsUnknown}
	running := basinv1.WarmupNodeStatus{NodeName: "busy", Phase: basinv1.WarmupRunning, Fits: basinv1.FitsUnknown, Bytes: 100}
	for _, tc := range []struct {
		name                       string
		nodes                      []basinv1.WarmupNodeStatus
		done                       bool
		phase, summary, fits, size string
		files, bytes               int64
		complete, failed, fitsCond metav1.ConditionStatus
	}{
		{name: "no nodes yet", phase: basinv1.WarmupPending, summary: "0/0", fits: "Unknown", size: "0",
			complete: metav1.ConditionFalse, failed: metav1.ConditionFalse, fitsCond: metav1.ConditionUnknown},
		{name: "all complete and fit", nodes: []basinv1.WarmupNodeStatus{done("a", "Yes", 2, 1024), done("b", "Yes", 3, 2048)}, done: true,
			phase: basinv1.WarmupComplete, summary: "2/2", fits: "Yes", size: "3Ki", files: 5, bytes: 3072,
			complete: metav1.ConditionTrue, failed: metav1.ConditionFalse, fitsCond: metav1.ConditionTrue},
		{name: "one running", nodes: []basinv1.WarmupNodeStatus{done("a", "Yes", 2, 1024), running},
			phase: basinv1.WarmupRunning, summary: "1/2", fits: "Yes", size: "1.1Ki", files: 2, bytes: 1124,
			complete: metav1.ConditionFalse, failed: metav1.ConditionFalse, fitsCond: metav1.ConditionTrue},
		{name: "one does not fit", nodes: []basinv1.WarmupNodeStatus{done("a", "Yes", 1, 1), done("b", "No", 1, 1)}, done: true,
			phase: basinv1.WarmupComplete, summary: "2/2", fits: "No", size: "2", files: 2, bytes: 2,
			complete: metav1.ConditionTrue, failed: metav1.ConditionFalse, fitsCond: metav1.ConditionFalse},
		{name: "one failed", nodes: []basinv1.WarmupNodeStatus{done("a", "Yes", 1, 1), failed}, done: true,
			phase: basinv1.WarmupFailed, summary: "1/2", fits: "Unknown", size: "1", files: 1, bytes: 1,
			complete: metav1.ConditionFalse, failed: metav1.ConditionTrue, fitsCond: metav1.ConditionUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := basinv1.WarmupStatus{Runs: 1, Nodes: tc.nodes}
			if got := fold(&s, 4); got != tc.done {
				t.Errorf("fold = %v, want %v", got, tc.done)
			}
			if s.Phase != tc.phase || s.NodesSummary != tc.summary || s.Fits != tc.fits || s.Size != tc.size || s.Files != tc.files || s.Bytes != tc.bytes {
				t.Errorf("phase %s nodes %s fits %s size %s files %d bytes %d, want %s %s %s %s %d %d",
					s.Phase, s.NodesSummary, s.Fits, s.Size, s.Files, s.Bytes, tc.phase, tc.summary, tc.fits, tc.size, tc.files, tc.bytes)
			}
			for typ, want := range map[string]metav1.ConditionStatus{basinv1.ConditionComplete: tc.complete, basinv1.ConditionFailed: tc.failed, basinv1.ConditionFits: tc.fitsCond} {
				c := meta.FindStatusCondition(s.Conditions, typ)
				if c == nil || c.Status != want || c.ObservedGeneration != 4 {
					t.Errorf("condition %s = %+v, want %s at generation 4", typ, c, want)
				}
			}
		})
	}
}

func TestSchedule(t *testing.T) {
	s, err := parseSchedule("0 2 * * *")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 3, 0, 0, 0, time.FixedZone("east", 5*3600)) // 22:00 UTC the day before
	if got, want := nextRun(s, at), time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("next = %v, want %v (UTC)", got, want)
	}
	if s, err := parseSchedule(""); s != nil || err != nil {
		t.Errorf("empty schedule: %v %v", s, err)
	}
	for _, bad := range []string{"* * *", "61 * * * *", "@daily", "CRON_TZ=Asia/Tokyo 0 2 * * *", "0 0 2 * * *"} {
		if _, err := parseSchedule(bad); !errors.Is(err, ErrInvalidSchedule) {
			t.Errorf("parseSchedule(%q) = %v, want ErrInvalidSchedule", bad, err)
		}
	}
}
