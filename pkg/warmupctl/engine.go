package warmupctl

import (
	"path"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
	"github.com/basin-csi/basin/pkg/warmup"
)

// The controller's glue to the warmup engine (pkg/warmup), and the only
// file of this package that imports it. The controller never runs the
// engine in its own process: each of its pods runs `csi-driver warmup`
// (the command's glue is cmd/csi-driver/warmup.go) with PodArgs, and
// ends with the engine's Report as its termination message, which
// applyReport reads back.

// PodArgs is the command line of csi-driver warmup that the pods of spec
// run: no state file (a pod's run is never resumed), a progress line
// every 10 s, the Report written to the termination message, the paths
// under the claim's mount.
func PodArgs(spec *basinv1.WarmupSpec) []string {
	args := []string{"warmup", "--no-state", "--interval=10s", "--result=" + corev1.TerminationMessagePathDefault}
	if spec.Threads > 0 {
		args = append(args, "--threads="+strconv.Itoa(int(spec.Threads)))
	}
	if spec.MetadataOnly {
		args = append(args, "--metadata-only")
	}
	if len(spec.Paths) == 0 {
		return append(args, dataDir)
	}
	for _, p := range spec.Paths {
		// Clean under "/" first: "../x" stays inside the volume.
		args = append(args, path.Join(dataDir, path.Clean("/"+p)))
	}
	return args
}

// applyReport sets n's figures, fit and message from msg, the termination
// message of a pod's warmup container; false if msg holds no Report.
func applyReport(n *basinv1.WarmupNodeStatus, msg string) bool {
	r, err := warmup.ParseReport([]byte(msg))
	if err != nil {
		return false
	}
	n.Files, n.Bytes, n.BytesPerSecond, n.Errors, n.Message = r.Files, r.Bytes, r.BytesPerSecond, r.Errors, r.Verdict
	switch r.Fits {
	case warmup.FitsYes:
		n.Fits = basinv1.FitsYes
	case warmup.FitsNo:
		n.Fits = basinv1.FitsNo
	default:
		n.Fits = basinv1.FitsUnknown
	}
	return true
}
