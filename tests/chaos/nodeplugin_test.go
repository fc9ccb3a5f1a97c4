package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
func (r *nodeRig) start(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(r.bin, args...)
	cmd.Stdout, cmd.Stderr = r.logs, r.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func (r *nodeRig) startHolder(t *testing.T) {
	r.holder = r.start(t, "fdholder", "--socket", r.holderSocket())
}

func (r *nodeRig) startNode(t *testing.T) {
	r.node = r.start(t, "node", "--endpoint", "unix://"+r.csiSocket(), "--node-id", "chaos-node",
		"--cache-root", r.cacheRoot, "--state-file", filepath.Join(r.dir, "node", "state.json"),
		"--fdholder-socket", r.holderSocket(), "--fuse-standby="+strconv.FormatBool(os.Getenv("BASIN_CHAOS_STANDBY") != "0"))
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
	r.kill(r.node)
	if err := supervisor.ReapProcsUnder(t.Context(), r.cacheRoot); err != nil {
		t.Fatal(err)
	}
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
	dev, err := supervisor.NewLinuxKernel().MountDev(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	return dev
}

// TestChaosNodePlugin is the node-plugin half of make chaos: 8 readers
// read a published volume while the node plugin's "container" (the
// plugin and its FUSE processes) is killed with SIGKILL and started again,
// repeatedly, and once the descriptor holder is restarted too. The
// restarted plugin must take the held connection over each time: no read
// fails, every byte matches, the mount is never replaced, and the cache
// verifies afterwards. The summary line is written to
// $BASIN_CHAOS_NODE_SUMMARY.
func TestChaosNodePlugin(t *testing.T) {
	testserver.OptIn(t, chaosEnv, "make chaos")
	const restarts = 6
	files := randomFiles("small/", 40, 256<<10)
	for k, v := range randomFiles("large/", 4, 12<<20) {
		files[k] = v
	}
	b := newBucket(t, files)
	r := newNodeRig(t)
	r.startHolder(t)
	r.startNode(t)

	const volumeID = "chaos-node-volume"
	staging, target := filepath.Join(r.dir, "staging"), filepath.Join(r.dir, "pod", "mount")
	rox := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	r.waitHealthyNode(t)
	err := r.call(ctx, func(ctx context.Context, c csi.NodeClient) error {
		if _, err := c.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{
			VolumeId: volumeID, StagingTargetPath: staging, VolumeCapability: rox,
			VolumeContext: map[string]string{
				mountspec.KeyBackend: "s3", mountspec.KeyBucket: b.name, mountspec.KeyRegion: b.srv.Region,
				mountspec.KeyPathStyle: "true", mountspec.KeyMetadataTTL: "1h", mountspec.KeyCacheSize: "256Mi",
			},
			Secrets: map[string]string{volumeattr.SecretAccessKeyID: b.creds.AccessKeyID,
				volumeattr.SecretSecretAccessKey: b.creds.SecretAccessKey, volumeattr.SecretEndpoint: b.srv.Endpoint},
		}); err != nil {
			return fmt.Errorf("NodeStageVolume: %w", err)
		}
		if _, err := c.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
			VolumeId: volumeID, StagingTargetPath: staging, TargetPath: target, VolumeCapability: rox, Readonly: true,
		}); err != nil {
			return fmt.Errorf("NodePublishVolume: %w", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dev := mountDev(t, target)
	rd := startReader(t, readerSpec{Dir: target, Files: sums(files), Threads: 8})

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	var done []killAt
	holderRestarts := 0
	time.Sleep(300 * time.Millisecond) // readers under way, the cache still cold
	for i := range restarts {
		time.Sleep(time.Duration(100+rng.IntN(700)) * time.Millisecond)
		if i == restarts/2 {
			// The holder restarts (its DaemonSet is rolled): the node
			// plugin hands it the connection again, and the next plugin
			// restart still takes it over.
			r.kill(r.holder)
			r.startHolder(t)
			holderRestarts++
			r.waitHeld(t, volumeID)
		}
		at := time.Now()
		r.killNodeContainer(t)
		dead := time.Now()
		r.startNode(t)
		r.waitHealthy(t, volumeID, staging)
		done = append(done, killAt{at: at, dead: dead, healed: time.Now()})
		if os.Getenv("BASIN_CHAOS_DEBUG") != "" {
			t.Logf("restart %d: killed at %s, healthy after %v", i, at.Format("15:04:05.000"), time.Since(at))
		}
		if got := mountDev(t, target); got != dev {
			t.Errorf("restart %d replaced the mount (device %d, was %d)", i+1, got, dev)
		}
	}
	time.Sleep(time.Second) // readers go on after the last restart
	rep := rd.report(t)
	pauses := pausesOf(rep, done)
	slices.Sort(pauses)
	maxPause, p50 := pauses[len(pauses)-1], pauses[len(pauses)/2]
	errs, kernelEIO := checkKillErrors(t, "reader", rep.Ops, done, r.failedOps())
	if len(rep.Ops) < 50*len(done) {
		t.Errorf("only %d reads during %d restarts: the readers stalled", len(rep.Ops), len(done))
	}

	err = r.call(ctx, func(ctx context.Context, c csi.NodeClient) error {
		if _, err := c.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: volumeID, TargetPath: target}); err != nil {
			return err
		}
		_, err := c.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: volumeID, StagingTargetPath: staging})
		return err
	})
	if err != nil {
		t.Fatalf("unpublish/unstage: %v", err)
	}
	if held, err := fdholder.NewClient(r.holderSocket()).List(ctx); err != nil || len(held) != 0 {
		t.Errorf("the holder holds %+v (%v) after the unstage", held, err)
	}
	caches, err := os.ReadDir(r.cacheRoot)
	if err != nil || len(caches) != 1 {
		t.Fatalf("cache root: %v %v", caches, err)
	}
	verifyCache(t, filepath.Join(r.cacheRoot, caches[0].Name()), volumeID, b)

	t.Logf("reads=%d bytes=%d pauses=%v", len(rep.Ops), rep.Bytes, pauses)
	writeSummary(t, "BASIN_CHAOS_NODE_SUMMARY", fmt.Sprintf("node plugin restarts: errors=%d restarts=%d holder_restarts=%d max_pause_ms=%d p50_pause_ms=%d kernel_eio=%d",
		errs, len(done), holderRestarts, maxPause.Milliseconds(), p50.Milliseconds(), kernelEIO))
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

// waitHeld waits until the holder holds the volume's connection.
func (r *nodeRig) waitHeld(t *testing.T, volumeID string) {
	t.Helper()
	c := fdholder.NewClient(r.holderSocket())
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		held, err := c.List(t.Context())
		if err == nil && slices.ContainsFunc(held, func(e fdholder.Entry) bool { return e.VolumeID == volumeID }) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the restarted holder did not get the connection back within 30s")
}
