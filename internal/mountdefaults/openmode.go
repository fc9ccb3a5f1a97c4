package mountdefaults

// OpenMode says who opens the regular files of a mount.
type OpenMode string

const (
	// OpenServer sends every open(2) of a file to the mount process as a
	// FUSE OPEN: the open pins one object version, and a fully cached
	// file is read through FUSE passthrough.
	OpenServer OpenMode = "server"
	// OpenKernel answers the first OPEN with ENOSYS, which makes the
	// kernel open every file of the connection itself (no OPEN, no
	// RELEASE, the page cache kept): a warm open costs no round trip.
	// Reads that miss the page cache arrive without a file handle and are
	// served by inode. Read-only mounts only.
	OpenKernel OpenMode = "kernel"
)

// OpenModes returns the accepted values, the default first.
func OpenModes() []OpenMode { return []OpenMode{OpenServer, OpenKernel} }

// Valid reports whether m is one of OpenModes; "" is not.
func (m OpenMode) Valid() bool { return m == OpenServer || m == OpenKernel }
