package driver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/supervisor"
)

// mountRequest is the typed mount request of a volume: what the FUSE
// process gets as flags (no secret) and credentials.
func (n *Node) mountRequest(id, staging string, a volumeattr.Attributes, readOnly bool, creds objstore.Credentials) supervisor.Request {
	return supervisor.Request{
		VolumeID:    id,
		StagingPath: staging,
		CacheDir:    cacheDirFor(n.cfg.CacheRoot, id),
		Source:      a.SourceURL(),
		Flags:       mountFlags(a),
		ReadOnly:    readOnly || a.ReadOnly,
		Credentials: creds,
	}
}

// mountFlags are the `csi-driver mount` flags of a's settings.
func mountFlags(a volumeattr.Attributes) []string {
	f := []string{
		"--cache-size", volumeattr.FormatSize(a.CacheSize),
		"--cache-block-size", volumeattr.FormatSize(a.CacheBlockSize),
		"--metadata-ttl", volumeattr.FormatTTL(a.MetadataTTL),
		"--negative-metadata-ttl", volumeattr.FormatTTL(a.NegativeMetadataTTL),
		"--read-ahead", volumeattr.FormatSize(a.ReadAhead),
		"--max-parallel-fetches", strconv.Itoa(a.MaxParallelFetches),
		"--file-mode", fmt.Sprintf("%04o", uint32(a.FileMode.Perm())),
		"--dir-mode", fmt.Sprintf("%04o", uint32(a.DirMode.Perm())),
	}
	if a.UID >= 0 {
		f = append(f, "--uid", strconv.FormatInt(a.UID, 10))
	}
	if a.GID >= 0 {
		f = append(f, "--gid", strconv.FormatInt(a.GID, 10))
	}
	if a.Endpoint != "" {
		f = append(f, "--endpoint", a.Endpoint)
	}
	if a.Region != "" {
		f = append(f, "--region", a.Region)
	}
	if a.PathStyle {
		f = append(f, "--path-style")
	}
	return f
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
