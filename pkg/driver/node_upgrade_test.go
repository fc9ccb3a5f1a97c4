package driver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/supervisor/supervisortest"
)

// writeFirstReleaseState writes a state file as the first release wrote
// it: one volume published at target, with no mount flags or group, and
// nothing saying that they were recorded.
func writeFirstReleaseState(t *testing.T, path, id, staging, target string, vctx map[string]string) {
	t.Helper()
	attrs, err := volumeattr.Parse(vctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	type target1 struct {
		AccessMode string `json:"accessMode"`
	}
	type volume1 struct {
		ID          string             `json:"id"`
		StagingPath string             `json:"stagingPath"`
		Context     map[string]string  `json:"context"`
		AccessMode  string             `json:"accessMode"`
		Targets     map[string]target1 `json:"targets"`
	}
	rwx := csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER.String()
	b, err := json.Marshal(map[string]any{"version": 1, "volumes": map[string]volume1{
		id: {ID: id, StagingPath: staging, Context: volumeattr.Encode(attrs), AccessMode: rwx, Targets: map[string]target1{target: {rwx}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Dir(path), staging, target} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// awaitReconciled waits until n took back the volumes of its state.
func awaitReconciled(t *testing.T, n *Node) {
	t.Helper()
	select {
	case <-n.reconciled:
	case <-time.After(10 * time.Second):
		t.Fatal("the start-up reconcile did not finish")
	}
}

// TestUpgradeKeepsVolumesOfTheFirstRelease: after a node plugin upgrade, a
// volume staged by the first release (whose record has no mount flags or
// group) is taken back as it was staged, and its pods' publications, with
// an fsGroup or mount flags, succeed, as does a repeated stage: the
// republish of running pods (requiresRepublish) and new pods keep working
// until the volume is unstaged. A volume staged by this release still
// refuses another group or other flags, after a restart too.
func TestUpgradeKeepsVolumesOfTheFirstRelease(t *testing.T) {
	dir := t.TempDir()
	k, r := supervisortest.NewKernel(), &supervisortest.Runner{}
	cfg := fakeNodeConfig(dir, k, r)
	vctx := fakeContext(t)
	const old, cur = "s3/1pds/r/fp/bucket/old/", "s3/1pds/r/fp/bucket/cur/"
	stagingOld, stagingCur := filepath.Join(dir, "staging-old"), filepath.Join(dir, "staging-cur")
	writeFirstReleaseState(t, cfg.StateFile, old, stagingOld, filepath.Join(dir, "pod1", "mount"), vctx)
	rwx := csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER

	var n *Node
	stage := func(id, staging string, vc *csi.VolumeCapability) error {
		_, err := n.NodeStageVolume(t.Context(), &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging,
			VolumeCapability: vc, VolumeContext: vctx})
		return err
	}
	publish := func(id, staging, pod string, vc *csi.VolumeCapability) error {
		_, err := n.NodePublishVolume(t.Context(), &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: staging,
			TargetPath: filepath.Join(dir, pod, "mount"), VolumeCapability: vc})
		return err
	}
	type call struct {
		name string
		err  func() error
		want codes.Code
	}
	run := func(calls []call) {
		t.Helper()
		for _, c := range calls {
			wantCode(t, c.name, c.err(), c.want)
		}
	}
	oldCalls := []call{
		{"republish with an fsGroup", func() error { return publish(old, stagingOld, "pod1", groupCap(rwx, "1000")) }, codes.OK},
		{"republish with mount flags", func() error { return publish(old, stagingOld, "pod1", groupCap(rwx, "", "noexec")) }, codes.OK},
		{"new pod with an fsGroup and mount flags", func() error { return publish(old, stagingOld, "pod2", groupCap(rwx, "1000", "noexec")) }, codes.OK},
		{"new pod with another fsGroup", func() error { return publish(old, stagingOld, "pod3", groupCap(rwx, "2000")) }, codes.OK},
		{"repeated stage with an fsGroup and mount flags", func() error { return stage(old, stagingOld, groupCap(rwx, "1000", "noexec")) }, codes.OK},
		{"publish with a bad group", func() error { return publish(old, stagingOld, "pod4", groupCap(rwx, "staff")) }, codes.InvalidArgument},
	}
	curCalls := []call{
		{"publish with another fsGroup", func() error { return publish(cur, stagingCur, "pod5", groupCap(rwx, "2000", "noexec")) }, codes.FailedPrecondition},
		{"publish with other mount flags", func() error { return publish(cur, stagingCur, "pod5", groupCap(rwx, "1000")) }, codes.FailedPrecondition},
		{"stage with another fsGroup", func() error { return stage(cur, stagingCur, groupCap(rwx, "2000", "noexec")) }, codes.FailedPrecondition},
		{"stage with other mount flags", func() error { return stage(cur, stagingCur, groupCap(rwx, "1000")) }, codes.AlreadyExists},
		{"publish as staged", func() error { return publish(cur, stagingCur, "pod5", groupCap(rwx, "1000", "noexec")) }, codes.OK},
		{"publish without fsGroup", func() error { return publish(cur, stagingCur, "pod6", groupCap(rwx, "", "noexec")) }, codes.OK},
	}
	wantOldAsStaged := func(when string) {
		t.Helper()
		v, ok := n.state.Get(old)
		if !ok || v.MountRecorded || v.MountFlags != nil || v.MountGroup != "" {
			t.Errorf("%s: record of the first release's volume = %+v, %v; want it as staged, flags and group unrecorded", when, v, ok)
		}
		if m, ok := k.Mounted(stagingOld); !ok || m.Flags.NoExec {
			t.Errorf("%s: staging mount %+v, %v; want the first release's (no noexec)", when, m, ok)
		}
	}

	n = newFakeNode(t, cfg) // the upgraded node plugin
	awaitReconciled(t, n)
	run(oldCalls)
	wantOldAsStaged("after the upgrade")
	if got := len(r.Started()); got != 1 {
		t.Errorf("%d FUSE processes started; want 1, by the take-back (a repeated stage starts none)", got)
	}
	if err := stage(cur, stagingCur, groupCap(rwx, "1000", "noexec")); err != nil {
		t.Fatalf("staging a volume with this release: %v", err)
	}
	if v, _ := n.state.Get(cur); !v.MountRecorded || v.MountGroup != "1000" {
		t.Errorf("record of this release = %+v; want flags and group recorded", v)
	}
	run(curCalls)

	n.Close()
	n = newFakeNode(t, fakeNodeConfig(dir, k, &supervisortest.Runner{})) // a restart keeps both as they are
	awaitReconciled(t, n)
	run(oldCalls)
	wantOldAsStaged("after a restart")
	run(curCalls)

	// Staged again after an unstage, the volume is this release's.
	if _, err := n.NodeUnstageVolume(t.Context(), &csi.NodeUnstageVolumeRequest{VolumeId: old, StagingTargetPath: stagingOld}); err != nil {
		t.Fatal(err)
	}
	if err := stage(old, stagingOld, groupCap(rwx, "1000")); err != nil {
		t.Fatalf("staging again: %v", err)
	}
	wantCode(t, "publish with another fsGroup after staging again", publish(old, stagingOld, "pod7", groupCap(rwx, "2000")), codes.FailedPrecondition)
}
