package cachestatus

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxNameLength is the longest DNS subdomain, the limit of an object name.
const maxNameLength = 253

// hashLength is how many hex digits of the (volume, node) hash a name
// ends with.
const hashLength = 10

// ObjectName is the name of the VolumeCache of PersistentVolume pv on
// node: "<pv>.<node>-<hash>", where the hash of both names tells apart
// pairs that read alike ("a.b"+"c" and "a"+"b.c"). When that is longer
// than a DNS subdomain may be, the readable part is cut. Both names are
// DNS subdomains (as the API server requires of PersistentVolumes and
// Nodes), so the result is one as well.
func ObjectName(pv, node string) string {
	sum := sha256.Sum256([]byte(pv + "\x00" + node))
	suffix := "-" + hex.EncodeToString(sum[:])[:hashLength]
	readable := pv + "." + node
	if len(readable)+len(suffix) > maxNameLength {
		readable = readable[:maxNameLength-len(suffix)]
	}
	// A DNS label neither starts nor ends with '-' or '.': the cut (or a
	// name ending in one) must not leave one before the suffix.
	readable = strings.TrimRight(readable, ".-")
	return readable + suffix
}
