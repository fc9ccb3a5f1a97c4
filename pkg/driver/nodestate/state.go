package nodestate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/basin-csi/basin/internal/atomicfile"
)

// version is the state file's schema version. Records gain fields without
// a new version (MountFlags, MountGroup and MountRecorded came after the
// first release): an older release reads the file and ignores what it does
// not know, so a node plugin downgrade keeps the node's volumes.
const version = 1

// ErrCorrupt: the state file cannot be read back.
var ErrCorrupt = errors.New("nodestate: corrupt state file")

// Target is one publication of a volume.
type Target struct {
	ReadOnly bool `json:"readOnly,omitempty"`
	// AccessMode is the CSI access mode name it was published with.
	AccessMode string `json:"accessMode,omitempty"`
}

// Volume is one staged volume.
type Volume struct {
	ID          string `json:"id"`
	StagingPath string `json:"stagingPath"`
	// Context is the volume context (attributes, no secret).
	Context map[string]string `json:"context"`
	// AccessMode is the CSI access mode name it was staged with.
	AccessMode string `json:"accessMode,omitempty"`
	// MountFlags are the volume capability's mount flags (the PV's
	// spec.mountOptions) it was staged with.
	MountFlags []string `json:"mountFlags,omitempty"`
	// MountGroup is the volume mount group (the pod's fsGroup) it was
	// staged with; "" for none.
	MountGroup string `json:"mountGroup,omitempty"`
	// MountRecorded says MountFlags and MountGroup were recorded. Records
	// of releases before them have neither: such a volume was staged
	// without mount flags and group, whatever its requests asked for,
	// so the flags and group of a request are not comparable with it.
	// An older release rewriting the file drops the field too, as it
	// drops the flags and group it restages without.
	MountRecorded bool `json:"mountRecorded,omitempty"`
	// Shared says the staging path is bound from a FUSE process that
	// read-only volumes of one source share (pkg/driver/node_share.go);
	// false: the volume's own process is mounted there, as every
	// volume of the releases before sharing.
	Shared bool `json:"shared,omitempty"`
	// Share names the share serving a shared volume (its supervised
	// volume ID) and ShareRoot the prefix that share serves, so that a
	// restarted node plugin stages the same share again; "" until its
	// first stage is done.
	Share     string `json:"share,omitempty"`
	ShareRoot string `json:"shareRoot,omitempty"`
	// Targets are the published targets by path.
	Targets map[string]Target `json:"targets,omitempty"`
}

// clone deep-copies v.
func (v Volume) clone() Volume {
	v.Context = maps.Clone(v.Context)
	v.MountFlags = slices.Clone(v.MountFlags)
	v.Targets = maps.Clone(v.Targets)
	return v
}

type file struct {
	Version int               `json:"version"`
	Volumes map[string]Volume `json:"volumes"`
}

// Store is the state file.
type Store struct {
	// constant
	path string

	mu   sync.Mutex        // guards vols and the file
	vols map[string]Volume // by volume ID
}

// Open reads the state file at path, or starts empty when there is none.
func Open(path string) (*Store, error) {
	s := &Store{path: path, vols: map[string]Volume{}}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("nodestate: %w", err)
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, path, err)
	}
	if f.Version != version {
		return nil, fmt.Errorf("%w: %s has version %d, want %d", ErrCorrupt, path, f.Version, version)
	}
	for id, v := range f.Volumes {
		if v.ID != id {
			return nil, fmt.Errorf("%w: %s: entry %q holds volume %q", ErrCorrupt, path, id, v.ID)
		}
		s.vols[id] = v
	}
	return s, nil
}

// Get returns a copy of a volume's record.
func (s *Store) Get(id string) (Volume, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.vols[id]
	return v.clone(), ok
}

// List returns copies of all records, ordered by ID.
func (s *Store) List() []Volume {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Volume, 0, len(s.vols))
	for _, id := range slices.Sorted(maps.Keys(s.vols)) {
		out = append(out, s.vols[id].clone())
	}
	return out
}

// Update applies f to the record of id (a zero Volume with ok false when
// there is none) and persists the result: the record f returns, or no
// record when it returns keep false. Nothing changes if f or the write
// fails.
func (s *Store) Update(id string, f func(v Volume, ok bool) (out Volume, keep bool, err error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.vols[id]
	nv, keep, err := f(old.clone(), ok)
	if err != nil {
		return err
	}
	next := maps.Clone(s.vols)
	if keep {
		nv.ID = id
		next[id] = nv.clone()
	} else {
		delete(next, id)
	}
	if err := writeAtomic(s.path, file{Version: version, Volumes: next}); err != nil {
		return err
	}
	s.vols = next
	return nil
}

// writeAtomic writes f to path: temp file, fsync, rename, directory fsync.
func writeAtomic(path string, f file) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("nodestate: encode: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("nodestate: %w", err)
	}
	if err := atomicfile.WriteFile(path, b, 0o600, atomicfile.Durable); err != nil {
		return fmt.Errorf("nodestate: %w", err)
	}
	return nil
}
