package driver

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	mountutils "k8s.io/mount-utils"

	"github.com/basin-csi/basin/pkg/mountspec"
)

// groupCap is a writer mount capability with mount flags and a volume
// mount group, as kubelet sends it for a pod with fsGroup.
func groupCap(mode csi.VolumeCapability_AccessMode_Mode, group string, flags ...string) *csi.VolumeCapability {
	c := mountCap(mode)
	c.GetMount().VolumeMountGroup, c.GetMount().MountFlags = group, flags
	return c
}

func (h *nodeHarness) stageCap(t *testing.T, v realVolume, staging string, vc *csi.VolumeCapability) error {
	t.Helper()
	_, err := h.client.NodeStageVolume(t.Context(), &csi.NodeStageVolumeRequest{
		VolumeId: v.id, StagingTargetPath: staging, VolumeContext: v.context, Secrets: v.secrets, VolumeCapability: vc,
	})
	return err
}

func (h *nodeHarness) publishCap(t *testing.T, v realVolume, staging, target string, ro bool, vc *csi.VolumeCapability) error {
	t.Helper()
	_, err := h.client.NodePublishVolume(t.Context(), &csi.NodePublishVolumeRequest{
		VolumeId: v.id, StagingTargetPath: staging, TargetPath: target, Readonly: ro, VolumeContext: v.context, VolumeCapability: vc,
	})
	return err
}

// asUser runs a shell script as uid:gid with the supplementary groups,
// the way a pod's non-root process with fsGroup runs.
func asUser(uid, gid uint32, groups []uint32, script string) (string, error) {
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: groups}}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestNodeAdvertisesVolumeMountGroup(t *testing.T) {
	n := &Node{}
	resp, err := n.NodeGetCapabilities(t.Context(), &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(resp.GetCapabilities(), func(c *csi.NodeServiceCapability) bool {
		return c.GetRpc().GetType() == csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP
	}) {
		t.Error("VOLUME_MOUNT_GROUP is not advertised: kubelet would chown every file itself")
	}
}

// TestNodeFSGroup: a volume staged and published with a volume mount group
// presents every file in that group with group write permission, so that a
// non-root process in the group (a pod with fsGroup) reads and writes, and
// one outside it only reads. Another group on the same node is refused.
func TestNodeFSGroup(t *testing.T) {
	h := startNode(t, nil)
	v := fileVolume(t, h)
	const uid, gid, group, other = 4242, 4242, 4243, 4244
	// The test's directories are 0700; the pod's process must reach the target.
	if err := os.Chmod(h.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	staging, target := filepath.Join(h.dir, "staging"), filepath.Join(h.dir, "pod1", "mount")
	rwx := csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	if err := h.stageCap(t, v, staging, groupCap(rwx, fmt.Sprint(group))); err != nil {
		t.Fatalf("NodeStageVolume: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := h.publishCap(t, v, staging, target, false, groupCap(rwx, fmt.Sprint(group))); err != nil {
		t.Fatalf("NodePublishVolume: %v", err)
	}

	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(target, "hello.txt"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Gid != group || st.Mode&0o777 != 0o664 {
		t.Errorf("hello.txt: gid %d mode %04o; want gid %d, 0664", st.Gid, st.Mode&0o777, group)
	}
	if err := syscall.Stat(target, &st); err != nil || st.Gid != group || st.Mode&0o777 != 0o775 {
		t.Errorf("root: gid %d mode %04o (%v); want gid %d, 0775", st.Gid, st.Mode&0o777, err, group)
	}

	script := fmt.Sprintf(`set -e; cd %q; cat hello.txt; echo new > new.txt; mkdir d; echo inner > d/f; cat d/f; echo more >> hello.txt; rm new.txt`, target)
	out, err := asUser(uid, gid, []uint32{group}, script)
	if err != nil {
		t.Fatalf("a process in the group cannot read and write: %v\n%s", err, out)
	}
	if !strings.Contains(out, "hello from the bucket") || !strings.Contains(out, "inner") {
		t.Errorf("output %q", out)
	}
	if got, err := v.store.Stat(t.Context(), "d/f"); err != nil || got.Size != int64(len("inner\n")) {
		t.Errorf("written file in the bucket: %+v, %v", got, err)
	}
	if out, err := asUser(uid, gid, nil, fmt.Sprintf("cat %q/hello.txt && echo x > %q/outsider.txt", target, target)); err == nil ||
		!strings.Contains(out, "hello from the bucket") || !strings.Contains(out, "Permission denied") {
		t.Errorf("a process outside the group: %v\n%s\nwant reads to work and writes denied", err, out)
	}

	// One FUSE process per volume and node presents one group.
	t2 := filepath.Join(h.dir, "pod2", "mount")
	err = h.publishCap(t, v, staging, t2, false, groupCap(rwx, fmt.Sprint(other)))
	wantCode(t, "publish with another fsGroup", err, codes.FailedPrecondition)
	if err != nil && !strings.Contains(err.Error(), fmt.Sprint(other)) {
		t.Errorf("the error does not name the groups: %v", err)
	}
	err = h.stageCap(t, v, staging, groupCap(rwx, fmt.Sprint(other)))
	wantCode(t, "stage with another fsGroup", err, codes.FailedPrecondition)
	if err := h.publishCap(t, v, staging, t2, false, groupCap(rwx, "")); err != nil {
		t.Errorf("publish without fsGroup: %v; want the volume as staged", err)
	}
	if err := h.stageCap(t, v, staging, groupCap(rwx, "")); err != nil {
		t.Errorf("repeated stage without fsGroup: %v", err)
	}
}

func TestNodeFSGroupReadOnly(t *testing.T) {
	h := startNode(t, nil)
	v := fileVolume(t, h)
	staging := filepath.Join(h.dir, "staging")
	if err := h.stageCap(t, v, staging, groupCap(csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, "4243")); err != nil {
		t.Fatalf("NodeStageVolume: %v", err)
	}
	var st syscall.Stat_t
	// A read-only volume is served by its share (node_share.go).
	if err := syscall.Stat(filepath.Join(h.node.publishSource(v.id, staging), "hello.txt"), &st); err != nil || st.Gid != 4243 || st.Mode&0o777 != 0o644 {
		t.Errorf("hello.txt: gid %d mode %04o (%v); want gid 4243, 0644 (group readable, no write)", st.Gid, st.Mode&0o777, err)
	}
}

func TestNodeMountFlagsAndGroupValidation(t *testing.T) {
	h := startNode(t, nil)
	v := fileVolume(t, h)
	staging := filepath.Join(h.dir, "staging")
	rwx := csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	for _, tc := range []struct {
		name string
		vc   *csi.VolumeCapability
		want []string
	}{
		{"unknown mount flag", groupCap(rwx, "", "noexec", "uid=1000"), []string{`"uid=1000"`, "noatime", "ro"}},
		{"contradicting flags", groupCap(rwx, "", "ro", "rw"), []string{`"ro"`, `"rw"`}},
		{"bad group", groupCap(rwx, "staff"), []string{`"staff"`, "gid"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := h.stageCap(t, v, staging, tc.vc)
			wantCode(t, "NodeStageVolume", err, codes.InvalidArgument)
			for _, w := range tc.want {
				if err != nil && !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
	v.context[mountspec.KeyMountOptions] = "noexec,max_read=4096"
	err := h.stageCap(t, v, staging, mountCap(rwx))
	wantCode(t, "NodeStageVolume with a bad mountOptions attribute", err, codes.InvalidArgument)
	if err != nil && (!strings.Contains(err.Error(), mountspec.KeyMountOptions) || !strings.Contains(err.Error(), "noatime")) {
		t.Errorf("error %q does not name the key and the accepted options", err)
	}
}

// mountOptionsOf returns the per-mount options of the mount on path.
func mountOptionsOf(t *testing.T, path string) []string {
	t.Helper()
	infos, err := mountutils.ParseMountInfo("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var opts []string
	for _, mi := range infos {
		if mi.MountPoint == path {
			opts = mi.MountOptions
		}
	}
	return opts
}

// TestNodeMountOptionsReachTheMount: the mountOptions attribute and the
// PV's spec.mountOptions (the capability's mount flags) reach the staging
// mount and every bind of it, read-only ones too.
func TestNodeMountOptionsReachTheMount(t *testing.T) {
	h := startNode(t, nil)
	v := fileVolume(t, h)
	v.context[mountspec.KeyMountOptions] = "noatime"
	staging, rw, ro := filepath.Join(h.dir, "staging"), filepath.Join(h.dir, "pod1", "mount"), filepath.Join(h.dir, "pod2", "mount")
	rwx := csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	vc := groupCap(rwx, "", "noexec")
	if err := h.stageCap(t, v, staging, vc); err != nil {
		t.Fatalf("NodeStageVolume: %v", err)
	}
	if err := h.publishCap(t, v, staging, rw, false, vc); err != nil {
		t.Fatalf("NodePublishVolume: %v", err)
	}
	if err := h.publishCap(t, v, staging, ro, true, vc); err != nil {
		t.Fatalf("NodePublishVolume read-only: %v", err)
	}
	for _, tc := range []struct {
		path string
		want []string
	}{
		{staging, []string{"rw", "noexec", "noatime", "nosuid", "nodev"}},
		{rw, []string{"rw", "noexec", "noatime", "nosuid", "nodev"}},
		{ro, []string{"ro", "noexec", "noatime", "nosuid", "nodev"}},
	} {
		got := mountOptionsOf(t, tc.path)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: mount options %q lack %s", tc.path, got, w)
			}
		}
	}
	err := h.publishCap(t, v, staging, filepath.Join(h.dir, "pod3", "mount"), false, groupCap(rwx, ""))
	wantCode(t, "publish with other mount flags than the stage's", err, codes.FailedPrecondition)
}

// TestSuccessorsGetTheSameSpec: the FUSE process started by a heal
// (takeover) and the one a restarted node plugin starts present the same
// group, modes and mount options as the first.
func TestSuccessorsGetTheSameSpec(t *testing.T) {
	h := startNode(t, nil)
	v := fileVolume(t, h)
	v.context[mountspec.KeyMountOptions] = "noatime"
	staging, target := filepath.Join(h.dir, "staging"), filepath.Join(h.dir, "pod", "mount")
	vc := groupCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, "4243", "noexec")
	if err := h.stageCap(t, v, staging, vc); err != nil {
		t.Fatalf("NodeStageVolume: %v", err)
	}
	if err := h.publishCap(t, v, staging, target, false, vc); err != nil {
		t.Fatalf("NodePublishVolume: %v", err)
	}
	check := func(when string) {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(target, "hello.txt"), &st); err != nil || st.Gid != 4243 || st.Mode&0o777 != 0o664 {
			t.Errorf("%s: hello.txt gid %d mode %04o (%v); want 4243, 0664", when, st.Gid, st.Mode&0o777, err)
		}
		for _, p := range []string{staging, target} {
			if got := mountOptionsOf(t, p); !slices.Contains(got, "noexec") || !slices.Contains(got, "noatime") {
				t.Errorf("%s: %s mount options %q; want noexec and noatime", when, p, got)
			}
		}
		handoffs, _ := filepath.Glob(filepath.Join(nodeRunDir(h.cfg.StateFile), "mount-*.json"))
		if len(handoffs) > 0 {
			t.Errorf("%s: hand-off files left: %q", when, handoffs)
		}
	}
	check("staged")

	if err := syscall.Kill(servingPid(t, h, v.id), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitHealed(t, h, v.id, 1)
	check("after a takeover")

	h.node.Close()
	h.serve(t) // a new node plugin takes the volume back from its node state
	h.waitReady(t)
	servingPid(t, h, v.id)
	check("after a node plugin restart")
}
