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
	// MountBinary is the csi-driver executable run as `MountBinary mount`.
	MountBinary string
	// OpTimeout bounds each call into a FUSE mount (default 10s).
	OpTimeout time.Duration
	// Supervisor tunes the FUSE process supervision; Binary, Binds and
	// CredentialsDir are set by NewNode. Its Runner and Kernel may be
	// fakes (supervisortest) in tests.
	Supervisor supervisor.Config
}

// Mounter stages volumes: mounts FUSE on the staging path and keeps its
// process alive. *supervisor.Manager implements it.
type Mounter interface {
	Stage(ctx context.Context, req supervisor.Request) error
	Unstage(ctx context.Context, volumeID, stagingPath string) error
	Check(ctx context.Context, volumeID string) (supervisor.Status, error)
}

// Node is the CSI Node service.
type Node struct {
	csi.UnimplementedNodeServer

	// constant
	cfg     NodeConfig
	state   *nodestate.Store
	mounter Mounter
	kernel  supervisor.Kernel
	close   func()

	mu   sync.Mutex      // guards busy
	busy map[string]bool // volume IDs an operation is running for
}

var _ Service = (*Node)(nil)

// NewNode opens the node state, starts supervising, and takes back the
// volumes a previous node plugin staged (bounded by ctx): each is mounted
// again and re-bound into its published targets.
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
	n := &Node{cfg: cfg, state: state, busy: map[string]bool{}}
	sc := cfg.Supervisor
	sc.Binary = cfg.MountBinary
	sc.Binds = n.binds
	sc.CredentialsDir = nodeRunDir(cfg.StateFile)
	if sc.Kernel == nil {
		sc.Kernel = supervisor.NewLinuxKernel()
	}
	if sc.Runner == nil && sc.Reaper == nil {
		sc.Reaper = supervisor.ReapProcs
	}
	m, err := supervisor.NewManager(sc)
	if err != nil {
		return nil, err
	}
	n.mounter, n.kernel, n.close = m, sc.Kernel, m.Close
	n.reconcile(ctx)
	return n, nil
}

// nodeRunDir is the 0700 directory of short-lived credentials handoff
// files, next to the state file.
func nodeRunDir(stateFile string) string {
	return stateFile + ".d"
}

// Close stops supervising. FUSE processes and mounts keep running for the
// next node plugin to take back.
func (n *Node) Close() { n.close() }

func (n *Node) register(s *grpc.Server) { csi.RegisterNodeServer(s, n) }

// pluginCapabilities: the node adds no plugin capability (the controller
// adds CONTROLLER_SERVICE).
func (n *Node) pluginCapabilities() []*csi.PluginCapability { return nil }

// probe checks that this node can mount FUSE and run the mount binary.
func (n *Node) probe(context.Context) error {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("%w: node cannot mount FUSE: %w", ErrPrecondition, err)
	}
	if _, err := os.Stat(n.cfg.MountBinary); err != nil {
		return fmt.Errorf("%w: mount binary: %w", ErrPrecondition, err)
	}
	return nil
}

// begin marks a volume busy; the caller must call release.
func (n *Node) begin(id string) (release func(), err error) {
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

// binds lists a volume's published targets for the supervisor's re-bind.
func (n *Node) binds(id string) []supervisor.Bind {
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
