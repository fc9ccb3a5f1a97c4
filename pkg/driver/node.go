package driver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/driver/nodestate"
	"github.com/basin-csi/basin/pkg/supervisor"
)

// Node defaults.
const (
	DefaultCacheRoot = "/var/lib/basin/cache"
	DefaultStateFile = "/var/lib/basin/node/state.json"
	// defaultOpTimeout bounds every call of the node into a FUSE mount
	// (statfs, unmount, bind) within a request.
	defaultOpTimeout = 10 * time.Second
	// defaultReconcileWorkers bounds the volumes taken back at once after
	// a restart.
	defaultReconcileWorkers = 4
)

// NodeConfig configures the Node service.
type NodeConfig struct {
	// NodeID is reported by NodeGetInfo.
	NodeID string
	// CacheRoot holds one cache directory per volume; they survive
	// unstage. DefaultCacheRoot when empty.
	CacheRoot string
	// StateFile is the node state (staged volumes, published targets);
	// DefaultStateFile when empty. Credentials are kept in a 0700
	// directory next to it.
	StateFile string
	// SharesDir holds the mount points of the FUSE processes read-only
	// volumes share (node_share.go). When empty they go beside the
	// staging directories (kubelet's .../<driver>/.basin-shares), in the
	// tree kubelet shares with the plugin (mount propagation), so that a
	// share's mount outlives the plugin's container like a staging mount.
	SharesDir string
	// MountBinary is the csi-driver executable run as `MountBinary mount`.
	MountBinary string
	// OpTimeout bounds each call into a FUSE mount (default 10s).
	OpTimeout time.Duration
	// ReconcileWorkers bounds how many volumes the start-up reconcile
	// takes back at once (default 4).
	ReconcileWorkers int
	// Supervisor tunes the FUSE process supervision; Binary, Binds and
	// CredentialsDir are set by NewNode. Its Runner and Kernel may be
	// fakes (supervisortest) in tests.
	Supervisor supervisor.Config
	// VolumesChanged, when not nil, is called after a volume was staged
	// or unstaged (the cache status reporter looks again soon). It must
	// not block.
	VolumesChanged func()
}

// Mounter stages volumes: mounts FUSE on the staging path and keeps its
// process alive. *supervisor.Manager implements it.
type Mounter interface {
	Stage(ctx context.Context, req supervisor.Request) error
	Unstage(ctx context.Context, volumeID, stagingPath string) error
	Check(ctx context.Context, volumeID string) (supervisor.Status, error)
}

// Node is the CSI Node service.
//
// Lifetimes: the Node's background work (the start-up reconcile, warmups)
// runs under life, which ends with the context given to NewNode or at
// Close; a warmup also ends when its volume is unstaged.
type Node struct {
	csi.UnimplementedNodeServer

	// constant
	cfg          NodeConfig
	state        *nodestate.Store
	mounter      Mounter
	kernel       supervisor.Kernel
	closeMounter func()
	life         context.Context // bounds the background work; ends at Close
	endLife      context.CancelFunc
	reconciled   chan struct{} // closed when the start-up reconcile finished
	closeOnce    sync.Once

	background sync.WaitGroup // goroutines under life: reconcile, warmups

	mu   sync.Mutex      // guards busy, pending, warmups, datasets
	busy map[string]bool // volume IDs an operation is running for
	// pending are the volumes the start-up reconcile has not taken back
	// yet; each channel is closed when it has (node_reconcile.go).
	pending map[string]chan struct{}
	// warmups are the running warmups by volume ID (node_warmup.go).
	warmups map[string]*warmupRun
	// datasets are the sizes whole-volume warmups found (node_dataset.go).
	datasets map[string]Dataset

	shares *shareTable // read-only volumes sharing a FUSE process (node_share.go)
}

var _ Service = (*Node)(nil)

// NewNode opens the node state, starts supervising, and starts taking back
// the volumes a previous node plugin staged, in the background (see
// reconcile): it returns at once, so the node serves while they are taken
// back. ctx bounds the Node's background work, as Close does.
func NewNode(ctx context.Context, cfg NodeConfig) (*Node, error) {
	if cfg.CacheRoot == "" {
		cfg.CacheRoot = DefaultCacheRoot
	}
	if cfg.StateFile == "" {
		cfg.StateFile = DefaultStateFile
	}
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = defaultOpTimeout
	}
	if cfg.ReconcileWorkers <= 0 {
		cfg.ReconcileWorkers = defaultReconcileWorkers
	}
	if cfg.NodeID == "" {
		return nil, errors.New("node: no node ID")
	}
	if cfg.MountBinary == "" {
		return nil, errors.New("node: no mount binary")
	}
	state, err := nodestate.Open(cfg.StateFile)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, state: state, reconciled: make(chan struct{}),
		busy: map[string]bool{}, pending: map[string]chan struct{}{}, warmups: map[string]*warmupRun{},
		datasets: map[string]Dataset{}, shares: newShareTable()}
	sc := cfg.Supervisor
	sc.Binary = cfg.MountBinary
	sc.Binds = n.binds
	sc.CredentialsDir = nodeRunDir(cfg.StateFile)
	if sc.Kernel == nil {
		sc.Kernel = supervisor.KernelFor(sc.Holder)
	}
	if sc.Runner == nil && sc.Reaper == nil {
		sc.Reaper = supervisor.ReapProcs
	}
	m, err := supervisor.NewManager(sc)
	if err != nil {
		return nil, err
	}
	n.mounter, n.kernel, n.closeMounter = m, sc.Kernel, m.Close
	n.life, n.endLife = context.WithCancel(ctx)
	n.startReconcile()
	return n, nil
}

// nodeRunDir is the 0700 directory of short-lived credentials handoff
// files, next to the state file.
func nodeRunDir(stateFile string) string {
	return stateFile + ".d"
}

// Close ends the background work (the start-up reconcile, warmups),
// waiting for it up to the operation timeout, then stops supervising. FUSE
// processes and mounts keep running for the next node plugin to take
// back. Later calls do nothing.
func (n *Node) Close() {
	n.closeOnce.Do(func() {
		n.mu.Lock() // no warmup starts after this
		n.endLife()
		n.mu.Unlock()
		done := make(chan struct{})
		go func() { n.background.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(n.cfg.OpTimeout):
			// A read of a warmup blocked on a hung mount; it fails
			// once the mount is gone.
			klog.InfoS("closing the node with background work still running", "waited", n.cfg.OpTimeout)
		}
		n.closeMounter()
	})
}

func (n *Node) register(s *grpc.Server) { csi.RegisterNodeServer(s, n) }

// pluginCapabilities: the node adds no plugin capability (the controller
// adds CONTROLLER_SERVICE).
func (n *Node) pluginCapabilities() []*csi.PluginCapability { return nil }

// probe checks that this node can mount FUSE and run the mount binary; it
// is ready once the start-up reconcile finished.
func (n *Node) probe(context.Context) (ready bool, err error) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return false, fmt.Errorf("%w: node cannot mount FUSE: %w", ErrPrecondition, err)
	}
	if _, err := os.Stat(n.cfg.MountBinary); err != nil {
		return false, fmt.Errorf("%w: mount binary: %w", ErrPrecondition, err)
	}
	select {
	case <-n.reconciled:
		return true, nil
	default:
		return false, nil
	}
}

// begin marks a volume busy; the caller must call release. A volume the
// start-up reconcile has not taken back yet is waited for, bounded by ctx.
func (n *Node) begin(ctx context.Context, id string) (release func(), err error) {
	if err := n.awaitTakenBack(ctx, id); err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.busy[id] {
		return nil, fmt.Errorf("%w for volume %q; retry later", ErrBusy, id)
	}
	n.busy[id] = true
	return func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.busy, id)
	}, nil
}

// binds lists what the supervisor binds again after it remounted id: a
// volume's published targets, or a share's members (shareBinds).
func (n *Node) binds(id string) []supervisor.Bind {
	if b, ok := n.shareBinds(id); ok {
		return b
	}
	return n.volumeBinds(id)
}

// volumeBinds lists a volume's published targets.
func (n *Node) volumeBinds(id string) []supervisor.Bind {
	v, ok := n.state.Get(id)
	if !ok {
		return nil
	}
	out := make([]supervisor.Bind, 0, len(v.Targets))
	for path, t := range v.Targets {
		out = append(out, supervisor.Bind{Target: path, ReadOnly: t.ReadOnly})
	}
	return out
}

// statWithin runs stat (os.Stat or os.Lstat) on path under the operation
// timeout: on a hung FUSE mount it may block, and then ctx's error is
// returned while the stat goes on in the background.
func (n *Node) statWithin(ctx context.Context, path string, stat func(string) (os.FileInfo, error)) (os.FileInfo, error) {
	ctx, cancel := n.opContext(ctx)
	defer cancel()
	type result struct {
		fi  os.FileInfo
		err error
	}
	done := make(chan result, 1)
	go func() { fi, err := stat(path); done <- result{fi, err} }()
	select {
	case r := <-done:
		return r.fi, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("stat %s: %w", path, ctx.Err())
	}
}

// opContext bounds one call into a FUSE mount.
func (n *Node) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, n.cfg.OpTimeout)
}

// NodeGetCapabilities lists the node RPCs Basin implements.
func (n *Node) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	var caps []*csi.NodeServiceCapability
	for _, t := range []csi.NodeServiceCapability_RPC_Type{
		csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
		csi.NodeServiceCapability_RPC_GET_VOLUME_STATS,
		csi.NodeServiceCapability_RPC_GET_VOLUME_HEALTH,
		csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
		// kubelet hands the pod's fsGroup to NodeStage/NodePublish
		// instead of walking the volume to chown it (mountspec.WithMountGroup).
		csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP,
	} {
		caps = append(caps, &csi.NodeServiceCapability{
			Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: t}},
		})
	}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: caps}, nil
}

// NodeGetInfo names the node. Basin volumes are reachable from every node
// that reaches the object store: no topology, no volume limit.
func (n *Node) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: n.cfg.NodeID}, nil
}
