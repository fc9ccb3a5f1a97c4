package mountspec

import "strconv"

// ParseMountGroup parses a CSI volume mount group (the pod's fsGroup that
// kubelet hands to the driver): "" for none (-1), or a decimal gid.
func ParseMountGroup(group string) (int64, error) {
	if group == "" {
		return -1, nil
	}
	gid, err := strconv.ParseInt(group, 10, 64)
	if err != nil || gid < 0 || gid > MaxID {
		return 0, invalidf("volume mount group (the pod's fsGroup) %q: want a gid from 0 to %d", group, int64(MaxID))
	}
	return gid, nil
}

// WithMountGroup returns s presenting every file and directory as owned
// by group gid (-1: s unchanged), with the group bits kubelet's fsGroup
// handling would give: read and write (and search for directories) on a
// writable volume, read (and search) on a read-only one. Call it after
// everything that can make s read-only (WithOptions, a reader access
// mode).
func (s Spec) WithMountGroup(gid int64) Spec {
	if gid < 0 {
		return s
	}
	s.GID = gid
	if s.Flags().ReadOnly {
		s.FileMode |= 0o040
		s.DirMode |= 0o050
	} else {
		s.FileMode |= 0o060
		s.DirMode |= 0o070
	}
	return s
}
