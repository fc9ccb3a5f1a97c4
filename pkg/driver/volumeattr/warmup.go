package volumeattr

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Limits of the warmup attribute.
const (
	maxWarmupPaths  = 64
	maxWarmupLength = 4096
)

// WarmupAll is the warmup entry for the whole volume.
const WarmupAll = "/"

// parseWarmup reads a comma-separated list of paths inside the volume:
// "train/,val/labels.csv", "/" for everything. Entries are trimmed, empty
// ones skipped, duplicates dropped; a leading or trailing "/" is dropped
// (the volume's root is "/"). Empty, "." and ".." segments and control
// characters are refused, so no entry leaves the volume.
func parseWarmup(a *Attributes, v string) error {
	const want = "want comma-separated paths inside the volume, such as train/,val/labels.csv, or / for all of it"
	if len(v) > maxWarmupLength {
		return fmt.Errorf("longer than %d bytes; %s", maxWarmupLength, want)
	}
	var paths []string
	for e := range strings.SplitSeq(v, ",") {
		p, err := cleanWarmupPath(strings.TrimSpace(e))
		if err != nil {
			return fmt.Errorf("%q: %w; %s", strings.TrimSpace(e), err, want)
		}
		if p == "" {
			continue
		}
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	if len(paths) > maxWarmupPaths {
		return fmt.Errorf("%d paths, at most %d allowed; %s", len(paths), maxWarmupPaths, want)
	}
	a.Warmup = paths
	return nil
}

// cleanWarmupPath normalises one entry; "" stays "" (skipped).
func cleanWarmupPath(e string) (string, error) {
	if e == "" {
		return "", nil
	}
	if strings.IndexFunc(e, unicode.IsControl) >= 0 {
		return "", errors.New("contains a control character")
	}
	p := strings.Trim(e, "/")
	if p == "" {
		return WarmupAll, nil
	}
	if p != strings.TrimSpace(p) {
		return "", errors.New("starts or ends with white space")
	}
	for seg := range strings.SplitSeq(p, "/") {
		switch seg {
		case "":
			return "", errors.New("has an empty path segment")
		case ".", "..":
			return "", fmt.Errorf("has a %q path segment", seg)
		}
	}
	return p, nil
}

// formatWarmup is parseWarmup's inverse.
func formatWarmup(a Attributes) string { return strings.Join(a.Warmup, ",") }
