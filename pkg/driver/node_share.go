package driver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/internal/keyedmutex"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/supervisor"
)

// One copy of a dataset per node. Read-only volumes whose mount specs
// differ in nothing but the prefix, and whose prefixes are equal or nested,
// share one FUSE process and so one cache: the share. The share's process
// is mounted on its own directory (shareMountDir) with the prefix of the
// volume that started it. A member's pods get bind mounts of the share's
// directory for its prefix (NodePublishVolume binds from publishSource);
// its staging path stays a plain directory. That is on purpose: kubelet
// unstages a volume only when no other mount shows the same file system
// root as its staging path (GetDeviceMountRefs), and staging paths bound
// from one share would hold each other (and the share's own mount) for
// ever. The kernel keeps one page cache for the members' files.
//
//   - What must match: every setting of the spec (TTLs, uid/gid, modes,
//     fsGroup, mount flags, cache settings, open mode, the shared cache
//     tier), so no setting of one volume reaches another. Writable
//     volumes never share: each writes with its own credentials.
//   - Access: the process reads the bucket with the credentials of one
//     member (the owner). Every other member proves at stage, with its
//     own credentials, that it can list and read its prefix
//     (proveReadable) before it is bound to anything the share cached.
//     When the owner leaves, the next member's credentials take over.
//   - Identity: a share is named after the volume that started it. Its
//     process, cache directory, held connection and metrics are that
//     volume's, exactly as without sharing, so a volume alone on a node
//     looks as it always did, and a volume staged again finds its cache.
//     It keeps the name when that volume leaves.
//   - Recovery: the share is one supervised volume, so takeover, the
//     standby, the descriptor holder and remounts work as for any volume;
//     after a remount the supervisor binds the members' published targets
//     again (shareBinds). Each member's record names its share and the
//     share's prefix (nodestate), so a restarted node plugin's start-up
//     reconcile stages the same shares again and takes their connections
//     over.
//   - Accounting: the share has one cache directory, so its bytes are
//     counted once by the metrics (StagedVolumes names the share) and by
//     `csi-driver cache stats`.

// sharesDirName is the directory, beside the volumes' staging
// directories, that holds the shares' mount points.
const sharesDirName = ".basin-shares"

// share is one FUSE process serving several volumes.
type share struct {
	id    string // supervisor volume ID: the volume that started it
	key   string // shareKey of the members' specs
	root  string // the prefix the process serves
	mount string // its mount point
	owner string // the member whose credentials the process uses
	// members by volume ID
	members map[string]shareMember
}

// shareMember is a volume a share serves.
type shareMember struct {
	sub string // its prefix below the share's root ("" for the root)
}

// shareTable is the node's shares, in memory (rebuilt by the start-up
// reconcile).
type shareTable struct {
	mu       sync.Mutex
	byID     map[string]*share
	byVolume map[string]*share
	locks    keyedmutex.Map // serialise the stages and unstages of one key
}

func newShareTable() *shareTable {
	return &shareTable{byID: map[string]*share{}, byVolume: map[string]*share{}}
}

// shareable reports whether a volume with spec may share a process.
func shareable(spec mountspec.Spec) bool { return spec.ReadOnly }

// shareKey is the digest of everything in spec but the prefix and the
// upload mode (no effect on the read-only volumes that share): volumes
// with equal keys may share.
func shareKey(spec mountspec.Spec) string {
	spec.Prefix = ""
	spec.UploadMode = ""
	b, err := json.Marshal(spec)
	if err != nil {
		panic(fmt.Sprintf("driver: a mount spec does not marshal: %v", err)) // plain data: cannot happen
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// shareMountDir is where the share id is mounted: under NodeConfig.SharesDir,
// or beside the staging directories (kubelet's
// .../basin.csi.dev/<hash>/globalmount).
func (n *Node) shareMountDir(staging, id string) string {
	root := n.cfg.SharesDir
	if root == "" {
		root = filepath.Join(filepath.Dir(filepath.Dir(filepath.Clean(staging))), sharesDirName)
	}
	sum := sha256.Sum256([]byte(id)) // volume IDs hold '/'
	return filepath.Join(root, hex.EncodeToString(sum[:16]))
}

// under reports whether prefix is root or below it; sub is the rest.
func under(prefix, root string) (sub string, ok bool) {
	if !strings.HasPrefix(prefix, root) {
		return "", false
	}
	return strings.TrimSuffix(prefix[len(root):], "/"), true
}

// find returns the share of key whose root holds prefix (the longest
// root), or nil.
func (t *shareTable) find(key, prefix string) (*share, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var best *share
	var bestSub string
	for _, s := range t.byID {
		if s.key != key {
			continue
		}
		if sub, ok := under(prefix, s.root); ok && (best == nil || len(s.root) > len(best.root)) {
			best, bestSub = s, sub
		}
	}
	return best, bestSub
}

// named returns share id when it serves key and holds prefix, or nil.
func (t *shareTable) named(id, key, prefix string) (*share, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.byID[id]; s != nil && s.key == key {
		if sub, ok := under(prefix, s.root); ok {
			return s, sub
		}
	}
	return nil, ""
}

// running reports whether a share named id runs.
func (t *shareTable) running(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id] != nil
}

// of returns the share of volume id, or nil.
func (t *shareTable) of(id string) *share {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byVolume[id]
}

// snapshot copies share s's fields under the lock.
func (t *shareTable) snapshot(s *share) (owner string, members map[string]shareMember) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := make(map[string]shareMember, len(s.members))
	for id, sm := range s.members {
		m[id] = sm
	}
	return s.owner, m
}

// shareRecord is what a member's record keeps of its share: its ID and
// the prefix it serves (zero before the first stage).
type shareRecord struct {
	ID, Root string
}

// stageShared stages a shareable volume: it joins the share of its source
// (proving its credentials first) or starts one. rec is the share the volume's record names (a restage after a node
// plugin restart): that share is staged again, under its name. It returns
// the share the volume is a member of.
func (n *Node) stageShared(ctx context.Context, req supervisor.Request, rec shareRecord) (shareRecord, error) {
	key := shareKey(req.Spec)
	unlock := n.shares.locks.Lock(key)
	defer unlock()
	if s := n.shares.of(req.VolumeID); s != nil {
		return shareRecord{s.id, s.root}, n.rebindTargets(ctx, s, req.VolumeID) // a repeated stage
	}
	var s *share
	var sub string
	if rec.ID != "" {
		s, sub = n.shares.named(rec.ID, key, req.Spec.Prefix)
	} else {
		s, sub = n.shares.find(key, req.Spec.Prefix)
	}
	if s != nil && s.id != req.VolumeID {
		if err := n.proveReadable(ctx, req); err != nil {
			return shareRecord{}, err
		}
		if err := n.isDir(ctx, filepath.Join(s.mount, sub)); err != nil && rec.ID == "" {
			// Nothing under its prefix yet: a process of its own.
			klog.InfoS("volume does not share: its prefix is no directory of the share", "volume", req.VolumeID, "share", s.id, "err", err)
			s = nil
		}
	}
	if s == nil {
		if rec.ID == "" || !strings.HasPrefix(req.Spec.Prefix, rec.Root) {
			rec = shareRecord{ID: req.VolumeID, Root: req.Spec.Prefix}
		}
		var err error
		if s, err = n.startShare(ctx, key, req, rec); err != nil {
			return shareRecord{}, err
		}
		sub, _ = under(req.Spec.Prefix, s.root)
	}
	n.shares.mu.Lock()
	s.members[req.VolumeID] = shareMember{sub: sub}
	n.shares.byVolume[req.VolumeID] = s
	n.shares.mu.Unlock()
	if err := n.rebindTargets(ctx, s, req.VolumeID); err != nil {
		if lerr := n.leaveShare(ctx, s, req.VolumeID); lerr != nil {
			klog.ErrorS(lerr, "stopping a share whose only volume could not be bound", "share", s.id)
		}
		return shareRecord{}, err
	}
	klog.InfoS("volume served by a shared FUSE process", "volume", req.VolumeID, "share", s.id, "root", s.root, "sub", sub)
	return shareRecord{s.id, s.root}, nil
}

// startShare starts the FUSE process of share rec (named rec.ID, serving
// rec.Root) with req's spec and credentials. A name taken by another share
// (its volume left it and was staged again with other settings) gets a
// suffix.
func (n *Node) startShare(ctx context.Context, key string, req supervisor.Request, rec shareRecord) (*share, error) {
	n.shares.mu.Lock()
	if n.shares.byID[rec.ID] != nil {
		sum := sha256.Sum256([]byte(key + "\x00" + rec.Root))
		rec.ID += "#" + hex.EncodeToString(sum[:4])
	}
	n.shares.mu.Unlock()
	s := &share{id: rec.ID, key: key, root: rec.Root, mount: n.shareMountDir(req.StagingPath, rec.ID), owner: req.VolumeID,
		members: map[string]shareMember{}}
	if err := os.MkdirAll(s.mount, 0o750); err != nil {
		return nil, fmt.Errorf("share mount point: %w", err)
	}
	sreq := req
	sreq.VolumeID, sreq.StagingPath, sreq.CacheDir = s.id, s.mount, cacheDirFor(n.cfg.CacheRoot, s.id)
	sreq.Spec.Prefix = s.root
	if err := os.MkdirAll(sreq.CacheDir, 0o700); err != nil {
		return nil, fmt.Errorf("cache directory: %w", err)
	}
	if err := n.mounter.Stage(ctx, sreq); err != nil {
		return nil, err
	}
	n.shares.mu.Lock()
	n.shares.byID[s.id] = s
	n.shares.mu.Unlock()
	return s, nil
}

// rebindTargets binds the share's directory for volume id again on the
// volume's published targets that are no mount of the share's connection
// (a share mounted anew after a node plugin restart). A new member has
// none.
func (n *Node) rebindTargets(ctx context.Context, s *share, id string) error {
	dev, err := n.kernel.MountDev(ctx, s.mount)
	if err != nil {
		return err
	}
	source := n.publishSource(id, "")
	bctx, cancel := n.opContext(ctx)
	defer cancel()
	for _, b := range n.volumeBinds(id) {
		if have, err := n.kernel.MountDev(bctx, b.Target); err == nil && have == dev {
			continue
		}
		if err := n.kernel.Bind(bctx, source, b.Target, b.ReadOnly); err != nil {
			klog.ErrorS(err, "re-binding a published target", "volume", id, "target", b.Target)
		}
	}
	return nil
}

// publishSource is what a volume's targets are bound from: its share's
// directory for its prefix, or else its staging path.
func (n *Node) publishSource(id, staging string) string {
	n.shares.mu.Lock()
	defer n.shares.mu.Unlock()
	if s := n.shares.byVolume[id]; s != nil {
		return filepath.Join(s.mount, s.members[id].sub)
	}
	return staging
}

// unstageShared leaves a member's share (and unmounts whatever is mounted
// on its staging path); the last member stops the share's process.
func (n *Node) unstageShared(ctx context.Context, s *share, id, staging string) error {
	unlock := n.shares.locks.Lock(s.key)
	defer unlock()
	uctx, cancel := n.opContext(ctx)
	defer cancel()
	if err := n.kernel.Unmount(uctx, staging); err != nil {
		return err
	}
	return n.leaveShare(ctx, s, id)
}

// leaveShare removes member id from s; the last member stops the share's
// process, and an owner that leaves hands the process its successor's
// credentials. The caller holds the key's lock.
func (n *Node) leaveShare(ctx context.Context, s *share, id string) error {
	n.shares.mu.Lock()
	delete(s.members, id)
	delete(n.shares.byVolume, id)
	last := len(s.members) == 0
	var next string
	if !last && s.owner == id {
		ids := make([]string, 0, len(s.members))
		for m := range s.members {
			ids = append(ids, m)
		}
		slices.Sort(ids)
		next, s.owner = ids[0], ids[0]
	}
	if last {
		delete(n.shares.byID, s.id)
	}
	n.shares.mu.Unlock()
	if last {
		if err := n.mounter.Unstage(ctx, s.id, s.mount); err != nil {
			return err
		}
		n.forgetRotation(s.id)
		if err := os.Remove(s.mount); err != nil && !errors.Is(err, os.ErrNotExist) {
			klog.ErrorS(err, "removing a share's mount point", "share", s.id)
		}
		klog.InfoS("share stopped: its last volume left", "share", s.id)
		return nil
	}
	if next != "" {
		// The bucket's keys and the shared cache tier's, each pair as the
		// next owner's record keeps it.
		for stateID, deliver := range map[string]func(context.Context, string, objstore.Credentials) error{
			next: n.deliverCredentials, sharedCacheCredentialsID(next): n.deliverSharedCacheCredentials,
		} {
			creds, err := n.state.LoadCredentials(stateID)
			switch {
			case err == nil && !creds.IsZero():
				_ = deliver(ctx, s.id, creds) // logged there
			case err == nil: // the default chain: the process keeps what it has
			default:
				klog.ErrorS(err, "loading the credentials of a share's next owner", "share", s.id, "volume", next)
			}
		}
	}
	return nil
}

// ShareMembers returns the volumes share id serves, sorted; nil when id
// names no share.
func (n *Node) ShareMembers(id string) []string {
	n.shares.mu.Lock()
	s := n.shares.byID[id]
	n.shares.mu.Unlock()
	if s == nil {
		return nil
	}
	_, members := n.shares.snapshot(s)
	out := make([]string, 0, len(members))
	for m := range members {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// check is the supervisor's status of volume id's FUSE process: its
// share's, for a member.
func (n *Node) check(ctx context.Context, id string) (supervisor.Status, error) {
	if s := n.shares.of(id); s != nil {
		return n.mounter.Check(ctx, s.id)
	}
	return n.mounter.Check(ctx, id)
}

// isDir checks, under the operation timeout, that path is a directory.
func (n *Node) isDir(ctx context.Context, path string) error {
	fi, err := n.statWithin(ctx, path, os.Stat)
	if err == nil && !fi.IsDir() {
		err = fmt.Errorf("%s is no directory", path)
	}
	return err
}

// shareBinds are the bind mounts the supervisor makes again after a
// remount of share id: each member's published targets. ok is false when
// id is no share.
func (n *Node) shareBinds(id string) (_ []supervisor.Bind, ok bool) {
	n.shares.mu.Lock()
	s := n.shares.byID[id]
	n.shares.mu.Unlock()
	if s == nil {
		return nil, false
	}
	var out []supervisor.Bind
	for _, m := range n.ShareMembers(id) {
		source := n.publishSource(m, "")
		for _, b := range n.volumeBinds(m) {
			b.Source = source
			out = append(out, b)
		}
	}
	return out, true
}

// shareProbeTimeout bounds proveReadable's requests.
const shareProbeTimeout = 30 * time.Second
