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
// the same. Only credentials rotate: an endpoint or region in the secret
// is ignored here (changing them needs a new stage).

// credentialsUpdater is implemented by *supervisor.Manager; test fakes of
// the Mounter may leave it out, and then nothing rotates.
type credentialsUpdater interface {
	UpdateCredentials(ctx context.Context, volumeID string, c objstore.Credentials) error
	ForgetCredentials(volumeID string) error
}

// publishCredentials parses a NodePublishVolume secret for backend. No
// secret, or one without credentials, is zero Credentials.
func publishCredentials(secrets map[string]string, backend objstore.Backend) (objstore.Credentials, error) {
	if len(secrets) == 0 {
		return objstore.Credentials{}, nil
	}
	s, err := volumeattr.ParseSecrets(secrets)
	if err != nil {
		return objstore.Credentials{}, err
	}
	if err := s.CheckBackend(backend); err != nil {
		return objstore.Credentials{}, err
	}
	return s.Credentials(), nil
}

// rotateCredentials makes the volume's running FUSE process use c when it
// differs from what it uses, and records c for later stages. Zero c does
// nothing. Failures are logged, not returned: the volume keeps serving
// with the credentials it has, and kubelet's next NodePublishVolume tries
// again. Nothing here logs or returns a credential.
func (n *Node) rotateCredentials(ctx context.Context, id string, c objstore.Credentials) {
	if c.IsZero() {
		return
	}
	saved, err := n.state.LoadCredentials(id)
	changed := err != nil || !saved.Equal(c)
	if changed {
		if err := n.state.SaveCredentials(id, c); err != nil {
			klog.ErrorS(err, "saving a volume's new credentials", "volume", id)
		}
	}
	process := id
	if s := n.shares.of(id); s != nil {
		// A share's process reads with its owner's credentials only.
		if owner, _ := n.shares.snapshot(s); owner != id {
			return
		}
		process = s.id
	}
	if err := n.deliverCredentials(ctx, process, c); errors.Is(err, supervisor.ErrNotRotatable) && changed { // once, not at every republish
		klog.InfoS("volume was staged without credentials: the secret's take effect at its next stage", "volume", id)
	}
}

// deliverCredentials hands c to the FUSE process of process (a volume or a
// share). Failures other than ErrNotRotatable are logged; all are returned.
func (n *Node) deliverCredentials(ctx context.Context, process string, c objstore.Credentials) error {
	u, ok := n.mounter.(credentialsUpdater)
	if !ok {
		return nil
	}
	rctx, cancel := n.opContext(ctx)
	defer cancel()
	err := u.UpdateCredentials(rctx, process, c)
	if err != nil && !errors.Is(err, supervisor.ErrNotRotatable) {
		klog.ErrorS(err, "delivering new credentials to the FUSE process; the next NodePublishVolume retries", "volume", process)
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
