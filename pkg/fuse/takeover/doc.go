// Package takeover lets a process take over a live FUSE kernel connection
// that another process served and died on, without the kernel or the
// callers noticing more than a pause. It wraps go-fuse's raw protocol
// interface (fuse.RawFileSystem, in practice fs.NewNodeFS's node bridge)
// and knows nothing of the file system behind it beyond that interface and
// two hooks.
//
// # API
//
//	s, err := takeover.Wrap(raw, hooks, takeover.Options{File: ..., ID: ..., Resume: ...}, log)
//	srv, err := s.NewServer("/dev/fd/N", mountOptions) // then srv.Serve()
//
// Wrap opens the connection's ledger (below); NewServer answers the
// kernel's INIT (fresh) or resumes the connection (Resume). The file
// system asks s.Pinned(ino) before it chooses passthrough for an open and
// s.Inherited(ino) for what to keep of a predecessor's state (pkg/fuse:
// staged writes). Options.File empty (a mount on a path) records nothing
// and cannot be resumed; the handle encoding still applies.
//
// # What the wrapped file system must do
//
//   - Keep node IDs stable across processes (fs.Options.ExternalNodeID
//     with persistent inode numbers), and answer LOOKUP "." on a node ID
//     it does not know by reviving that node (fs.NodeLookupNoder on the
//     root); NodeId 0 in the reply means it is gone (ESTALE).
//   - Re-open a predecessor's handle from the node ID and open flags: an
//     inherited handle is re-opened once on first use, read-write when it
//     could write (a writer goes on where its predecessor was).
//   - Implement Hooks: Orphaned (the last inherited open file of an inode
//     was released) and Resending (a resent UNLINK, RMDIR or RENAME is
//     being answered: answer it as done when it fails the way the
//     predecessor's success makes it fail). Hooks are called concurrently
//     from go-fuse's request goroutines.
//
// # What it records
//
// Both files live in the directory of Options.File (the volume's cache
// directory), mode 0600, and are not fsynced: they serve a successor on
// the same kernel connection, which a machine crash ends.
//
//   - The session record, Options.File: JSON {"id", "initIn", "initOut"}
//     written once by the connection's first server (temp file and
//     rename). id is Options.ID; initIn the kernel's INIT as go-fuse keeps
//     it (fuse.InitIn, 40-byte header included, 104 bytes); initOut
//     go-fuse's reply body without its header. A successor writes initIn
//     to a socketpair go-fuse's NewServer reads, checks the reply equals
//     initOut byte for byte, then dup3s the live /dev/fuse descriptor over
//     the socket before Serve, and sends FUSE_NOTIFY_RESEND (Linux >= 6.9)
//     so the kernel resends what the predecessor read and never answered.
//   - The I/O mode ledger, fuse-iomodes2-<ID>.log: every open and release
//     of a file in passthrough or page-cache mode (the kernel gives an
//     inode one I/O mode at a time), appended as 24-byte little-endian
//     records: inode (8 bytes), backing ID (4, passthrough opens), op (1:
//     1 open, 2 release, ored with 0x80 for a resent request the
//     predecessors had counted already), mode (1: 1 passthrough, 2 page
//     cache; direct I/O is not recorded), 2 unused, the request's unique
//     without the resend bit (8). Each process starts by rewriting it to
//     the live opens (unique 0) plus the recent uniques as uncounted
//     records, and rewrites it so at 2^20 records. A fresh connection
//     removes the ledgers of earlier connections (fuse-iomodes*-*.log).
//
// Handles given to the kernel are epoch<<35 | mode<<33 | writable<<32 |
// go-fuse's handle, the epoch random per process: a successor decodes its
// predecessor's handles, so this layout is part of the format.
//
// # Compatibility
//
//   - A ledger of the 16-byte format (same fields up to the mode, no
//     unique), written before records carried uniques to
//     fuse-iomodes-<ID>.log, is replayed when fuse-iomodes2-<ID>.log is
//     missing: its opens are counted, no resent request is matched against
//     it, and the successor goes on with a 24-byte ledger.
//   - No ledger at all: the inherited opens are unknown; nothing is
//     pinned and Inherited reports every inode.
//   - A session record of another connection, or whose INIT reply this
//     binary would compute differently (another go-fuse or other mount
//     options), is refused with ErrNoSession: the caller remounts instead.
//
// # Resent requests
//
// A resent request carries its first unique with bit 63 set. An OPEN or
// RELEASE whose unique is among the last 4096 records of the replayed
// ledger is answered without being counted again; UNLINK, RMDIR and RENAME
// are marked for the file system (Hooks.Resending); a resent MKDIR that
// finds the directory is answered with its entry.
//
// The go-fuse behaviour this relies on beyond its API (EXPERIMENTAL
// functions, struct layouts, NewServer answering INIT on /dev/fd/N and
// reading nothing before Serve) is pinned by gofuse_contract_test.go and
// gofuse_handshake_test.go without root, and gofuse_live_test.go on a real
// connection.
package takeover
