// Package fuse serves one volume — a bucket or a prefix of one, seen through
// an objstore.Store and a pkg/cache Cache — as a POSIX file system with
// go-fuse v2 (the fs package).
//
// # Names
//
// A volume path "a/b/c" is the object key "a/b/c" (the store is already
// scoped to the volume's prefix). Directories are the common prefixes of a
// delimiter listing ("implicit directories") and directory marker objects
// whose key ends in "/". When a key is both an object and a prefix ("x" and
// "x/y"), the object wins: "x" is a file and the subtree below it is
// hidden. Keys that cannot be file names ("a//b", ".", "..", names longer
// than 255 bytes) are not shown.
//
// Inode numbers come from the cache's persistent inode table
// (cache.InodeOf), so a path keeps its number across remounts and restarts.
// They are also the kernel's node IDs, which lets a new process take over
// a live connection (--resume): the takeover layer (pkg/fuse/takeover)
// wraps go-fuse's node bridge, starts go-fuse on the initialised
// connection and maps the dead process's handles and lookup counts;
// revive.go rebuilds nodes from their numbers, takeover.go is the file
// system's side of the layer (its hooks).
//
// # Metadata caching
//
// Entry and attribute timeouts given to the kernel equal the cache's
// MetadataTTL, the negative-entry timeout equals its NegativeMetadataTTL; a negative
// TTL means "forever" and becomes a timeout of a year. A change made in the
// bucket by someone else becomes visible once the TTL has passed.
// Directory reads use READDIRPLUS: one listing (cache.List) answers both the
// names and their attributes, without a request per entry.
//
// # Reads
//
// Opening a file pins one object version in the cache. When the cache holds
// the whole object (Handle.LocalFile), the open is served by FUSE
// passthrough (kernel >= 6.9, CAP_SYS_ADMIN) on the cache's own descriptor
// of the data file: the kernel reads that file directly and this process
// sees no READ requests. Read-only opens carry FOPEN_NOFLUSH, so a
// reader's close(2) sends no FLUSH: a warm file costs one OPEN and an
// asynchronous RELEASE. Otherwise
// reads are answered in user space, spliced from the data file when it is
// complete and read through the cache (Handle.ReadAt) when not; a
// per-handle sequential-read detector grows a prefetch window up to
// Config.ReadAhead. FOPEN_KEEP_CACHE keeps the kernel page cache across
// opens while the object's version is unchanged.
//
// An open file is the version it pinned: fstat(2) on it, and the kernel's
// attribute checks before reads, are answered from that version without a
// request (so a TTL of 0 costs a request per open, not per read(2)).
//
// With Config.OpenMode OpenKernel (read-only mounts only) the first OPEN is
// answered with ENOSYS and the kernel opens every file of the connection
// itself: no OPEN, FLUSH or RELEASE, the page cache kept across opens, no
// passthrough, no pinned version. READs arrive without a file handle and
// are served by inode (inoderead.go); a new version found by the TTL drops
// the inode's pages.
//
// The kernel allows one backing file per inode and refuses to mix
// passthrough and cached opens of an inode, so: while an inode is open in
// passthrough mode, further read opens share that backing file (they see the
// version the first open pinned) and write opens fail with ETXTBSY; while it
// is open in user-space mode, new opens stay in user space.
//
// # Writes
//
// Unless the volume is read-only (then every mutation is EROFS), writes are
// staged in a local file under cache.WritesDir and uploaded with one
// store.Put (the adapter switches to multipart for large bodies) when a
// file descriptor is closed (FLUSH) or fsync'ed. A close or fsync that
// returned success means the object is in the bucket; neither is cut short
// by the kernel's interrupts. After the last handle is released the staged
// file is installed as the cached copy of the new version, so a checkpoint
// written here is re-read locally.
//
// The bucket changes only when a whole version is uploaded: O_TRUNC,
// ftruncate and rewrites change the staged file, never the object, until
// close or fsync. A process that takes the connection over adopts the
// staged files of the files its predecessor had open (stagedwrites.go), so their
// writers go on as if nothing happened.
//
//   - New files (O_CREAT) start empty; an empty file is uploaded too.
//   - O_CREAT|O_EXCL is exclusive across every mount of the bucket: the
//     name is claimed in the bucket at once with the store's conditional
//     create (exclusive.go), so of two creators on any nodes exactly one
//     succeeds and the other's open fails with EEXIST; the claim is the
//     file's first, empty version, replaced by the upload at close.
//   - Opening an existing object with O_TRUNC starts from an empty file.
//   - Writing into an existing object without O_TRUNC (including O_APPEND
//     and truncate(2) to a non-zero size) first copies the object down into
//     the staging file ("copy-down"), then applies the write; the whole
//     object is uploaded again on close. This is correct but costs a full
//     download and upload of large objects.
//   - All handles of one inode share one staging file, so concurrent
//     writers on this node see each other's writes; the last upload wins in
//     the bucket. Writers on different nodes are not coordinated.
//   - unlink deletes the object; mkdir writes a marker object "dir/"; rmdir
//     deletes the marker and fails with ENOTEMPTY while any key remains
//     under the prefix.
//   - rename of a file is a server-side copy followed by a delete: not
//     atomic; a crash in between leaves both names. rename of a directory
//     copies then deletes every key under the prefix one by one: not atomic
//     and not isolated; on failure part of the tree may exist under both
//     names. RENAME_EXCHANGE is not supported (EINVAL). Directories with
//     files open for writing cannot be renamed (EBUSY).
//   - Incomplete multipart uploads a killed process left are aborted by
//     its successor, and old ones by a periodic sweep (orphans.go).
//   - chmod, chown and utimes are kept in the object's user metadata
//     (posixmeta.go: s3fs's, rclone's and gcsfuse's keys), replaced on the
//     server without an upload (objstore.MetadataSetter); symbolic links
//     are objects whose body is the target (symlink.go).
//   - Hard links, special files and extended attributes are not
//     supported; link and mknod of a FIFO, socket or device fail with EPERM
//     (errno.go lists each unsupported operation's errno), mknod of a
//     regular file creates an empty one.
//   - A name the mount removed (unlink, rmdir, a tree, a rename's source)
//     is gone from its own lookups at once (cache.Removed), not after the
//     metadata TTL.
//
// # Errors
//
// toErrno is the one place that turns errors into errno values: objstore
// sentinels by errors.Is (not found → ENOENT, access denied → EACCES,
// lost exclusive create → EEXIST, changed object → ESTALE, invalid key → EINVAL, throttled / unavailable /
// timeout → EIO). Every operation that talks to the bucket runs under
// Config.OpTimeout, so an unreachable bucket yields EIO, never a hung
// system call.
package fuse
