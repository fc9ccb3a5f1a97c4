package driver

import (
	"context"
	"errors"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/supervisor"
)

// Credential rotation. The CSIDriver sets requiresRepublish, so kubelet
// calls NodePublishVolume again every minute or two for every published
// volume, with the node-publish secret read afresh. When its credentials
// differ from those the volume's FUSE process uses, the process switches
// to them without a remount (pkg/supervisor/rotate.go), and the node state
// keeps them for later stages (a node plugin restart stages again with
// them). A repeated NodeStageVolume with a changed node-stage secret does
// the same. The shared cache tier's credentials (sharedCacheAccessKeyID,
// sharedCacheSecretAccessKey) rotate the same way, each pair on its own:
// a secret that holds only one of them rotates only that one. Only
// credentials rotate: an endpoint or region in the secret is ignored here
// (changing them needs a new stage).

// credentialsUpdater is implemented by *supervisor.Manager; test fakes of
// the Mounter may leave it out, and then nothing rotates.
type credentialsUpdater interface {
	UpdateCredentials(ctx context.Context, volumeID string, c objstore.Credentials) error
	UpdateSharedCacheCredentials(ctx context.Context, volumeID string, c objstore.Credentials) error
	ForgetCredentials(volumeID string) error
}

// publishCredentials parses a NodePublishVolume secret for backend. No
// secret is zero Secrets (no credentials).
func publishCredentials(secrets map[string]string, backend objstore.Backend) (volumeattr.Secrets, error) {
	if len(secrets) == 0 {
		return volumeattr.Secrets{}, nil
	}
	s, err := volumeattr.ParseSecrets(secrets)
	if err != nil {
		return volumeattr.Secrets{}, err
	}
	if err := s.CheckBackend(backend); err != nil {
		return volumeattr.Secrets{}, err
	}
	return s, nil
}

// rotateCredentials makes the volume's running FUSE process use the
// credentials of s (the store's, and the shared cache tier's) where they
// differ from what it uses, and records them for later stages. Zero
// credentials do nothing. Failures are logged, not returned: the volume
// keeps serving with the credentials it has, and kubelet's next
// NodePublishVolume tries again. Nothing here logs or returns a
// credential.
func (n *Node) rotateCredentials(ctx context.Context, id string, s volumeattr.Secrets) {
	process := id
	if sh := n.shares.of(id); sh != nil {
		// A share's process reads with its owner's credentials only.
		process = ""
		if owner, _ := n.shares.snapshot(sh); owner == id {
			process = sh.id
		}
	}
	n.rotate(ctx, id, process, id, "bucket", s.Credentials(), n.deliverCredentials)
	n.rotate(ctx, id, process, sharedCacheCredentialsID(id), "shared cache tier", s.SharedCacheCredentials(), n.deliverSharedCacheCredentials)
}

// rotate saves c, one pair of volume id's credentials, under stateID in
// the node state when it changed, and hands it with deliver to the FUSE
// process of process ("": none, a share's member that does not own its
// process).
func (n *Node) rotate(ctx context.Context, id, process, stateID, what string, c objstore.Credentials,
	deliver func(context.Context, string, objstore.Credentials) error) {
	if c.IsZero() {
		return
	}
	saved, err := n.state.LoadCredentials(stateID)
	changed := err != nil || !saved.Equal(c)
	if changed {
		if err := n.state.SaveCredentials(stateID, c); err != nil {
			klog.ErrorS(err, "saving a volume's new credentials", "volume", id, "credentials", what)
		}
	}
	if process == "" {
		return
	}
	if err := deliver(ctx, process, c); errors.Is(err, supervisor.ErrNotRotatable) && changed { // once, not at every republish
		klog.InfoS("volume was staged without these credentials: the secret's take effect at its next stage", "volume", id, "credentials", what)
	}
}

// deliverCredentials hands c, the bucket's credentials, to the FUSE
// process of process (a volume or a share). Failures other than
// ErrNotRotatable are logged; all are returned.
func (n *Node) deliverCredentials(ctx context.Context, process string, c objstore.Credentials) error {
	return n.deliver(ctx, process, "bucket", c, credentialsUpdater.UpdateCredentials)
}

// deliverSharedCacheCredentials is deliverCredentials for the shared
// cache tier's credentials.
func (n *Node) deliverSharedCacheCredentials(ctx context.Context, process string, c objstore.Credentials) error {
	return n.deliver(ctx, process, "shared cache tier", c, credentialsUpdater.UpdateSharedCacheCredentials)
}

func (n *Node) deliver(ctx context.Context, process, what string, c objstore.Credentials,
	update func(credentialsUpdater, context.Context, string, objstore.Credentials) error) error {
	u, ok := n.mounter.(credentialsUpdater)
	if !ok {
		return nil
	}
	rctx, cancel := n.opContext(ctx)
	defer cancel()
	err := update(u, rctx, process, c)
	if err != nil && !errors.Is(err, supervisor.ErrNotRotatable) {
		klog.ErrorS(err, "delivering new credentials to the FUSE process; the next NodePublishVolume retries", "volume", process, "credentials", what)
	}
	return err
}

// forgetRotation removes a volume's rotation files when it is unstaged.
func (n *Node) forgetRotation(id string) {
	if u, ok := n.mounter.(credentialsUpdater); ok {
		if err := u.ForgetCredentials(id); err != nil {
			klog.ErrorS(err, "removing a volume's rotated credentials", "volume", id)
		}
	}
}
