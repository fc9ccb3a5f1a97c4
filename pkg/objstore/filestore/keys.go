package filestore

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/basin-csi/basin/pkg/objstore"
)

const (
	// reservedPrefix starts every name filestore keeps for itself.
	reservedPrefix = ".basin-"
	// markerName holds the directory marker object "<dir>/".
	markerName = reservedPrefix + "dir"
	// tempPrefix starts the names of uploads in progress.
	tempPrefix = reservedPrefix + "tmp-"
	// maxNameLen is NAME_MAX on Linux file systems.
	maxNameLen = 255
)

// keyToPath maps an object key to its slash-separated path relative to the
// root. Every path it returns is local (no "..", not absolute) and distinct
// keys give distinct paths.
func keyToPath(key string) (string, error) {
	if key == "" {
		return "", fmt.Errorf("filestore: empty key: %w", objstore.ErrInvalidKey)
	}
	if !utf8.ValidString(key) {
		return "", fmt.Errorf("filestore: key %q is not UTF-8: %w", key, objstore.ErrInvalidKey)
	}
	body, marker := strings.CutSuffix(key, "/")
	if body == "" {
		return "", fmt.Errorf("filestore: key %q: %w", key, objstore.ErrInvalidKey)
	}
	for seg := range strings.SplitSeq(body, "/") {
		if !validName(seg) {
			return "", fmt.Errorf("filestore: key %q: segment %q cannot be a file name: %w", key, seg, objstore.ErrInvalidKey)
		}
	}
	if marker {
		return body + "/" + markerName, nil
	}
	return body, nil
}

// validName reports whether a directory entry name can be one segment of a
// key: the names listings show and keyToPath accepts are the same.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && len(name) <= maxNameLen &&
		!strings.HasPrefix(name, reservedPrefix) && !strings.ContainsRune(name, 0) &&
		!strings.ContainsRune(name, '/') && utf8.ValidString(name)
}

// pathToKey is the inverse of keyToPath.
func pathToKey(p string) string {
	if dir, file := path.Split(p); file == markerName {
		return dir
	}
	return p
}

// dirPath is the relative directory holding the keys that start with dk
// ("" or ending in '/').
func dirPath(dk string) string {
	if dk == "" {
		return "."
	}
	return strings.TrimSuffix(dk, "/")
}
