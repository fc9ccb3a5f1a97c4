package driver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/supervisor"
)

// mountSpec builds a volume's mount spec: its attributes, read-only when
// the access mode only reads, with the volume capability's mount flags
// (a PV's spec.mountOptions) and mount group (the pod's fsGroup, which
// kubelet leaves to the driver since it advertises VOLUME_MOUNT_GROUP).
// Stage, the start-up reconcile and nothing else call it, so a volume
// taken back after a restart gets the spec it was staged with.
func mountSpec(a volumeattr.Attributes, readOnly bool, mountFlags []string, mountGroup string) (mountspec.Spec, error) {
	s := a.Spec
	s.ReadOnly = s.Flags().ReadOnly || readOnly
	s, err := s.WithOptions(mountFlags)
	if err != nil {
		return mountspec.Spec{}, fmt.Errorf("%w: volume capability mount flags (the PV's spec.mountOptions): %w", ErrInvalidRequest, err)
	}
	gid, err := mountspec.ParseMountGroup(mountGroup)
	if err != nil {
		return mountspec.Spec{}, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	s = s.WithMountGroup(gid)
	if err := s.Validate(); err != nil {
		return mountspec.Spec{}, err
	}
	return s, nil
}

// mountRequest is the typed mount request of a volume.
func (n *Node) mountRequest(id, staging string, spec mountspec.Spec, creds objstore.Credentials) supervisor.Request {
	return supervisor.Request{
		VolumeID:    id,
		StagingPath: staging,
		CacheDir:    cacheDirFor(n.cfg.CacheRoot, id),
		Spec:        spec,
		Credentials: creds,
	}
}

// cacheDirFor is a volume's cache directory under root. Volume IDs hold
// '/' and may be long, so the name is a readable tail of the ID and a hash
// of all of it.
func cacheDirFor(root, id string) string {
	sum := sha256.Sum256([]byte(id))
	tail := id
	if i := strings.LastIndexByte(strings.TrimRight(tail, "/"), '/'); i >= 0 {
		tail = tail[i+1:]
	}
	tail = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, strings.TrimRight(tail, "/"))
	if len(tail) > 40 {
		tail = tail[:40]
	}
	name := hex.EncodeToString(sum[:12])
	if tail != "" && tail != "." && tail != ".." {
		name = tail + "-" + name
	}
	return filepath.Join(root, name)
}
