package driver

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/supervisor"
	"github.com/basin-csi/basin/pkg/supervisor/supervisortest"
)

// fakeNode is a Node on fake processes and mounts (no root needed).
func fakeNode(t *testing.T) (*Node, *supervisortest.Kernel, *supervisortest.Runner) {
	t.Helper()
	k, r := supervisortest.NewKernel(), &supervisortest.Runner{}
	return newFakeNode(t, fakeNodeConfig(t.TempDir(), k, r)), k, r
}

// fakeNodeConfig configures a Node whose state and caches live in dir, on
// the fake kernel k and runner r.
func fakeNodeConfig(dir string, k *supervisortest.Kernel, r *supervisortest.Runner) NodeConfig {
	return NodeConfig{
		NodeID: "n1", CacheRoot: filepath.Join(dir, "cache"), StateFile: filepath.Join(dir, "state.json"), SharesDir: filepath.Join(dir, "shares"),
		MountBinary: "/bin/true",
		Supervisor:  supervisor.Config{Runner: r, Kernel: k, CheckInterval: 10 * time.Millisecond, MaxHealBackoff: 10 * time.Millisecond},
	}
}

// newFakeNode starts a Node of cfg, closed when the test ends.
func newFakeNode(t *testing.T, cfg NodeConfig) *Node {
	t.Helper()
	n, err := NewNode(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return n
}

func fakeContext(t *testing.T) map[string]string {
	return map[string]string{mountspec.KeyBackend: "file", mountspec.KeyBucket: t.TempDir()}
}

func TestNodeRequestValidation(t *testing.T) {
	n, _, _ := fakeNode(t)
	ctx := t.Context()
	vc := mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)
	block := &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: vc.AccessMode}
	dir := t.TempDir()
	good := fakeContext(t)
	for _, tc := range []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"stage: no volume ID", func() error {
			_, err := n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{StagingTargetPath: dir, VolumeCapability: vc})
			return err
		}, codes.InvalidArgument},
		{"stage: no capability", func() error {
			_, err := n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: dir})
			return err
		}, codes.InvalidArgument},
		{"stage: block", func() error {
			_, err := n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: dir, VolumeCapability: block, VolumeContext: good})
			return err
		}, codes.InvalidArgument},
		{"stage: unknown attribute", func() error {
			_, err := n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: dir, VolumeCapability: vc,
				VolumeContext: with(good, "cacheSzie", "1Gi")})
			return err
		}, codes.InvalidArgument},
		{"stage: writer mode on a readOnly volume", func() error {
			_, err := n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: dir, VolumeCapability: vc,
				VolumeContext: with(good, mountspec.KeyReadOnly, "true")})
			return err
		}, codes.InvalidArgument},
		{"stage: kernel opens on a writable volume", func() error {
			_, err := n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: dir, VolumeCapability: vc,
				VolumeContext: with(good, mountspec.KeyOpenMode, "kernel")})
			if err != nil && !strings.Contains(err.Error(), mountspec.KeyOpenMode) {
				return fmt.Errorf("error %q does not name %s", err, mountspec.KeyOpenMode)
			}
			return err
		}, codes.InvalidArgument},
		{"stage: kernel opens of a reader mode", func() error {
			ro := mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY)
			_, err := n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "v-ro", StagingTargetPath: t.TempDir(), VolumeCapability: ro,
				VolumeContext: with(good, mountspec.KeyOpenMode, "kernel")})
			return err
		}, codes.OK},
		{"publish: not staged", func() error {
			_, err := n.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "v", StagingTargetPath: dir, TargetPath: dir + "/t", VolumeCapability: vc})
			return err
		}, codes.FailedPrecondition},
		{"publish: no target", func() error {
			_, err := n.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "v", StagingTargetPath: dir, VolumeCapability: vc})
			return err
		}, codes.InvalidArgument},
		{"unpublish: never published", func() error {
			_, err := n.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: "v", TargetPath: dir + "/none"})
			return err
		}, codes.OK},
		{"unstage: never staged", func() error {
			_, err := n.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: "v", StagingTargetPath: dir + "/none"})
			return err
		}, codes.OK},
		{"stats: unknown volume", func() error {
			_, err := n.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: "v", VolumePath: dir})
			return err
		}, codes.NotFound},
		{"health: no volume ID", func() error {
			_, err := n.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{})
			return err
		}, codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) { wantCode(t, tc.name, tc.call(), tc.want) })
	}
}

func TestNodePublishRules(t *testing.T) {
	n, k, _ := fakeNode(t)
	ctx := t.Context()
	dir := t.TempDir()
	staging := filepath.Join(dir, "staging")
	vctx := fakeContext(t)
	stage := func(id string, mode csi.VolumeCapability_AccessMode_Mode) {
		t.Helper()
		if _, err := n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging + id,
			VolumeCapability: mountCap(mode), VolumeContext: vctx}); err != nil {
			t.Fatal(err)
		}
	}
	publish := func(id, target string, mode csi.VolumeCapability_AccessMode_Mode, ro bool) error {
		_, err := n.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: staging + id,
			TargetPath: filepath.Join(dir, target), VolumeCapability: mountCap(mode), Readonly: ro})
		return err
	}
	stage("rox", csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY)
	// A read-only volume is served by its share, mounted apart; its
	// staging path stays a plain directory (node_share.go).
	src := n.publishSource("rox", staging+"rox")
	if m, ok := k.Mounted(src); !ok || !m.ReadOnly || src == staging+"rox" {
		t.Errorf("a ReadOnlyMany volume's share at %s = %+v, %v; want a read-only mount", src, m, ok)
	}
	if err := publish("rox", "a", csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, false); err != nil {
		t.Fatal(err)
	}
	if m, _ := k.Mounted(filepath.Join(dir, "a")); m.Source != src || !m.ReadOnly {
		t.Errorf("ReadOnlyMany target = %+v, want a read-only bind of the share", m)
	}

	stage("rwop", csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER)
	if err := publish("rwop", "b", csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER, false); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "second target of a ReadWriteOncePod volume",
		publish("rwop", "c", csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER, false), codes.FailedPrecondition)
	wantCode(t, "same target, other readOnly",
		publish("rwop", "b", csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER, true), codes.AlreadyExists)
	wantCode(t, "same target again", publish("rwop", "b", csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER, false), codes.OK)

	stats, err := n.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: "rwop", VolumePath: filepath.Join(dir, "b")})
	if err != nil {
		t.Fatal(err)
	}
	if u := stats.GetUsage(); len(u) != 2 || u[0].GetTotal() != 1000*4096 || u[0].GetUsed() != 400*4096 || u[1].GetUsed() != 60 {
		t.Errorf("stats = %v", u)
	}
	wantCode(t, "stats on another path", func() error {
		_, err := n.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: "rwop", VolumePath: "some/path"})
		return err
	}(), codes.NotFound)

	// While a heal has taken the broken mount off and not yet put its
	// successor in place, the path is a plain directory: its figures are
	// not the volume's, and the volume is not usable.
	if err := os.MkdirAll(filepath.Join(dir, "b"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := k.Unmount(ctx, filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	_, err = n.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: "rwop", VolumePath: filepath.Join(dir, "b")})
	wantCode(t, "stats of a target whose mount is off", err, codes.FailedPrecondition)
	if err == nil || !strings.Contains(err.Error(), "not mounted") {
		t.Errorf("stats of a target whose mount is off: %v, want it to say not mounted", err)
	}
}

func TestNodeHealthReportsHeal(t *testing.T) {
	n, _, r := fakeNode(t)
	ctx := t.Context()
	staging := filepath.Join(t.TempDir(), "staging")
	if _, err := n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: staging,
		VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER), VolumeContext: fakeContext(t)}); err != nil {
		t.Fatal(err)
	}
	health := func() []*csi.VolumeHealth_VolumeHealthEntry {
		h, err := n.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: "v"})
		if err != nil {
			t.Fatal(err)
		}
		return h.GetVolumeHealth().GetHealthStatuses()
	}
	if h := health(); len(h) != 0 {
		t.Errorf("a fresh volume reports %v", h)
	}
	r.Last().Exit(nil)
	deadline := time.Now().Add(5 * time.Second)
	for {
		h := health()
		if len(h) == 1 && h[0].GetReason() == reasonHealed && h[0].GetStatus() == csi.VolumeHealthErrorType_DEGRADED {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health after the FUSE process exited: %v", h)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCacheDirFor(t *testing.T) {
	a := cacheDirFor("/c", "s3/1pds/us-east-1/k7dqa2mb/datasets/sanity/pvc-1f0c/")
	b := cacheDirFor("/c", "s3/1pds/us-east-1/k7dqa2mb/datasets/other/pvc-1f0c/")
	if a == b || filepath.Dir(a) != "/c" || filepath.Base(a)[:9] != "pvc-1f0c-" {
		t.Errorf("cacheDirFor = %q, %q", a, b)
	}
	if d := cacheDirFor("/c", "../../etc"); filepath.Dir(d) != "/c" {
		t.Errorf("an ID escaped the cache root: %q", d)
	}
}

// TestVolumeConditionIsVolumeHealth: the node reports a volume's condition
// through NodeGetVolumeHealth (GET_VOLUME_HEALTH), because CSI 1.13 removed
// VolumeCondition from NodeGetVolumeStatsResponse together with the
// VOLUME_CONDITION capability (docs/architecture.md). Should a later spec
// bring them back, this fails: report the condition there too.
func TestVolumeConditionIsVolumeHealth(t *testing.T) {
	if f := (&csi.NodeGetVolumeStatsResponse{}).ProtoReflect().Descriptor().Fields().ByName("volume_condition"); f != nil {
		t.Error("the CSI spec has NodeGetVolumeStatsResponse.volume_condition again: fill it from health()")
	}
	if _, ok := csi.NodeServiceCapability_RPC_Type_value["VOLUME_CONDITION"]; ok {
		t.Error("the CSI spec has the VOLUME_CONDITION capability again: advertise it")
	}
	n, _, _ := fakeNode(t)
	caps, err := n.NodeGetCapabilities(t.Context(), &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var health bool
	for _, c := range caps.GetCapabilities() {
		health = health || c.GetRpc().GetType() == csi.NodeServiceCapability_RPC_GET_VOLUME_HEALTH
	}
	if !health {
		t.Errorf("the node does not advertise GET_VOLUME_HEALTH: %v", caps.GetCapabilities())
	}
}
