package driver

import (
	"context"
	"errors"
	"fmt"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/backend"
	"github.com/basin-csi/basin/pkg/supervisor"
)

// shareProbeKey is the name proveReadable asks for below a volume's
// prefix. It need not exist: S3 answers a HEAD of a missing key 404 only
// to a caller allowed to read it (403 otherwise), GCS likewise.
const shareProbeKey = "basin-access-probe.absent"

// proveReadable checks, with the volume's own credentials, that it may
// list its prefix and read objects under it, before the volume is bound
// to a share whose process reads with another volume's credentials. A
// refusal is PermissionDenied naming the volume, its source and the
// store's answer (kubelet shows it in the pod's events); a store that
// does not answer is Unavailable. Each request is bounded.
func (n *Node) proveReadable(ctx context.Context, req supervisor.Request) error {
	ctx, cancel := context.WithTimeout(ctx, shareProbeTimeout)
	defer cancel()
	store, err := backend.Open(ctx, req.Spec.StoreConfig(), req.Credentials)
	if err != nil {
		return fmt.Errorf("volume %s: open %s to check its credentials: %w", req.VolumeID, req.Spec.SourceURL(), err)
	}
	defer func() { _ = store.Close() }()
	refused := func(what string, err error) error {
		return fmt.Errorf("volume %s: its credentials cannot %s %s, so it is not given what other volumes of that source cached on this node: %w",
			req.VolumeID, what, req.Spec.SourceURL(), err)
	}
	if _, err := store.List(ctx, objstore.ListOptions{Prefix: req.Spec.Prefix, Delimiter: "/", MaxKeys: 1}); err != nil {
		return refused("list", err)
	}
	if _, err := store.Stat(ctx, req.Spec.Prefix+shareProbeKey); err != nil && !errors.Is(err, objstore.ErrNotFound) {
		return refused("read objects of", err)
	}
	return nil
}
