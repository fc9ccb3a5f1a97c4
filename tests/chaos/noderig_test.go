package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	mountutils "k8s.io/mount-utils"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/fdholder"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/supervisor"
)

// nodeRig runs the real `csi-driver node` and `csi-driver fdholder`
// processes, as their two DaemonSets do, in a temporary directory.
type nodeRig struct {
	bin, dir  string
	holder    *exec.Cmd
	node      *exec.Cmd
	logs      *os.File // both processes' output
	cacheRoot string
	nodeArgs  []string // more flags of the node plugin
	metrics   string   // the node plugin's --metrics-address, if any
}

func newNodeRig(t *testing.T) *nodeRig {
	t.Helper()
	bin, err := testserver.CSIDriver()
	if err != nil {
		t.Fatalf("build csi-driver: %v", err)
	}
	dir, err := os.MkdirTemp("", "basin-np-") // short: socket path limit
	if err != nil {
		t.Fatal(err)
	}
	logs, err := os.Create(filepath.Join(dir, "plugin.log"))
	if err != nil {
		t.Fatal(err)
	}
	r := &nodeRig{bin: bin, dir: dir, logs: logs, cacheRoot: filepath.Join(dir, "cache")}
	t.Cleanup(func() {
		r.kill(r.node)
		r.kill(r.holder)
		if err := supervisor.ReapProcsUnder(context.Background(), r.cacheRoot); err != nil {
			t.Logf("cleanup: %v", err)
		}
		if infos, err := mountutils.ParseMountInfo("/proc/self/mountinfo"); err == nil {
			for i := len(infos) - 1; i >= 0; i-- {
				if strings.HasPrefix(infos[i].MountPoint, dir+"/") {
					_ = unix.Unmount(infos[i].MountPoint, unix.MNT_DETACH)
				}
			}
		}
		if os.Getenv("BASIN_CHAOS_DEBUG") != "" {
			// Each restart's timeline: the plugin's start, the takeover,
			// the FUSE process's start.
			if b, err := os.ReadFile(logs.Name()); err == nil {
				for _, l := range strings.Split(string(b), "\n") {
					if strings.Contains(l, "node plugin starting") || strings.Contains(l, "took over the connection") ||
						strings.Contains(l, `serving\"`) {
						t.Log(l)
					}
				}
			}
		}
		if t.Failed() {
			if b, err := os.ReadFile(logs.Name()); err == nil {
				lines := strings.Split(string(b), "\n")
				t.Logf("plugin log (last lines):\n%s", strings.Join(lines[max(0, len(lines)-60):], "\n"))
			}
		}
		_ = logs.Close()
		_ = os.RemoveAll(dir)
	})
	return r
}

func (r *nodeRig) holderSocket() string { return filepath.Join(r.dir, "fdholder", "fdholder.sock") }
func (r *nodeRig) csiSocket() string    { return filepath.Join(r.dir, "csi.sock") }

// start runs `csi-driver args...`.
func (r *nodeRig) start(args ...string) (*exec.Cmd, error) {
	cmd := exec.Command(r.bin, args...)
	cmd.Stdout, cmd.Stderr = r.logs, r.logs
	return cmd, cmd.Start()
}

func (r *nodeRig) startHolder(t *testing.T) {
	t.Helper()
	var err error
	if r.holder, err = r.start("fdholder", "--socket", r.holderSocket()); err != nil {
		t.Fatal(err)
	}
}

func (r *nodeRig) startNode(t *testing.T) {
	t.Helper()
	if err := r.launchNode(); err != nil {
		t.Fatal(err)
	}
}

// launchNode starts the node plugin (startNode, for a goroutine other than
// the test's).
func (r *nodeRig) launchNode() (err error) {
	args := []string{"node", "--endpoint", "unix://" + r.csiSocket(), "--node-id", "chaos-node",
		"--cache-root", r.cacheRoot, "--state-file", filepath.Join(r.dir, "node", "state.json"), "--shares-dir", filepath.Join(r.dir, "shares"),
		"--fdholder-socket", r.holderSocket(), "--fuse-standby=" + strconv.FormatBool(os.Getenv("BASIN_CHAOS_STANDBY") != "0")}
	r.node, err = r.start(append(args, r.nodeArgs...)...)
	return err
}

// kill SIGKILLs a process and waits for it.
func (r *nodeRig) kill(cmd *exec.Cmd) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// killNodeContainer does what a node plugin container's end does: the
// plugin and every FUSE process it started die at once.
func (r *nodeRig) killNodeContainer(t *testing.T) {
	t.Helper()
	if err := r.endNodeContainer(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// endNodeContainer is killNodeContainer for a goroutine other than the
// test's.
func (r *nodeRig) endNodeContainer(ctx context.Context) error {
	r.kill(r.node)
	return supervisor.ReapProcsUnder(ctx, r.cacheRoot)
}

// call runs f on a fresh connection to the node plugin (a restarted
// plugin replaces the socket; a fresh client does not wait out gRPC's
// reconnection backoff).
func (r *nodeRig) call(ctx context.Context, f func(context.Context, csi.NodeClient) error) error {
	conn, err := grpc.NewClient("unix://"+r.csiSocket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	return f(ctx, csi.NewNodeClient(conn))
}

// waitHealthy waits until the node plugin answers and the volume serves at
// path.
func (r *nodeRig) waitHealthy(t *testing.T, volumeID, path string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		last = r.call(ctx, func(ctx context.Context, c csi.NodeClient) error {
			// A statfs through the mount: it answers once a process serves.
			_, err := c.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: volumeID, VolumePath: path})
			return err
		})
		cancel()
		if last == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the node plugin did not report the volume healthy within a minute: %v", last)
}

// mountDev is the device number of the mount on path (its FUSE
// connection), from the mount table.
func mountDev(t *testing.T, path string) uint64 {
	t.Helper()
	dev, err := supervisor.NewLinuxKernel(nil).MountDev(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	return dev
}

// publication is a volume staged and published through the node plugin's
// CSI calls, as kubelet does for a pod.
type publication struct {
	volumeID        string
	staging, target string
	bucket          bucket
	readOnly        bool
	cacheSize       string
	creds           objstore.Credentials // the secret's keys (a session token too)
}

// capability is the publication's CSI volume capability.
func (p publication) capability() *csi.VolumeCapability {
	mode := csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	if p.readOnly {
		mode = csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	}
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
	}
}

// secrets is the publication's node-stage and node-publish secret.
func (p publication) secrets() map[string]string {
	s := map[string]string{volumeattr.SecretAccessKeyID: p.creds.AccessKeyID,
		volumeattr.SecretSecretAccessKey: p.creds.SecretAccessKey, volumeattr.SecretEndpoint: p.bucket.srv.Endpoint}
	if p.creds.SessionToken != "" {
		s[volumeattr.SecretSessionToken] = p.creds.SessionToken
	}
	return s
}

// publish stages p's volume and publishes it on its target.
func (r *nodeRig) publish(ctx context.Context, p publication) error {
	return r.call(ctx, func(ctx context.Context, c csi.NodeClient) error {
		if _, err := c.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{
			VolumeId: p.volumeID, StagingTargetPath: p.staging, VolumeCapability: p.capability(),
			VolumeContext: map[string]string{
				mountspec.KeyBackend: "s3", mountspec.KeyBucket: p.bucket.name, mountspec.KeyRegion: p.bucket.srv.Region,
				mountspec.KeyPathStyle: "true", mountspec.KeyMetadataTTL: "1h", mountspec.KeyCacheSize: p.cacheSize,
			},
			Secrets: p.secrets(),
		}); err != nil {
			return fmt.Errorf("NodeStageVolume: %w", err)
		}
		return r.republish(ctx, c, p)
	})
}

// republish calls NodePublishVolume again, as kubelet does every minute or
// two for a driver with requiresRepublish: it delivers p's (rotated)
// credentials.
func (r *nodeRig) republish(ctx context.Context, c csi.NodeClient, p publication) error {
	if _, err := c.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
		VolumeId: p.volumeID, StagingTargetPath: p.staging, TargetPath: p.target, VolumeCapability: p.capability(),
		Readonly: p.readOnly, Secrets: p.secrets(),
	}); err != nil {
		return fmt.Errorf("NodePublishVolume: %w", err)
	}
	return nil
}

// unpublish unpublishes and unstages a volume.
func (r *nodeRig) unpublish(ctx context.Context, volumeID, staging, target string) error {
	return r.call(ctx, func(ctx context.Context, c csi.NodeClient) error {
		if _, err := c.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: volumeID, TargetPath: target}); err != nil {
			return err
		}
		_, err := c.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: volumeID, StagingTargetPath: staging})
		return err
	})
}

// failedOps returns the lines of the plugin's log (its FUSE processes'
// output among them) that report a failed operation.
func (r *nodeRig) failedOps() []string {
	b, err := os.ReadFile(r.logs.Name())
	if err != nil {
		return []string{"reading the plugin's log: " + err.Error()}
	}
	var out []string
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.Contains(line, failedOpMarker) {
			out = append(out, line)
		}
	}
	return out
}

// waitHealthyNode waits until the node plugin serves.
func (r *nodeRig) waitHealthyNode(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		err := r.call(ctx, func(ctx context.Context, c csi.NodeClient) error {
			_, err := c.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
			return err
		})
		cancel()
		if err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the node plugin did not start within a minute")
}

// waitHeld waits until the holder holds n connections (a read-only
// volume's is held under the name of the share that serves it).
func (r *nodeRig) waitHeld(t *testing.T, n int) {
	t.Helper()
	c := fdholder.NewClient(r.holderSocket())
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		held, err := c.List(t.Context())
		if err == nil && len(held) >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the restarted holder did not get the connection back within 30s")
}
