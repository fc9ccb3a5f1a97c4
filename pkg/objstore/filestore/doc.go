// Package filestore serves a local directory as a bucket: the embedded
// default backend for demos and tests, and a way to expose data already on
// disk.
//
// # Layout
//
// Object key "a/b/c" is the regular file <root>/a/b/c. A directory marker
// object "a/b/" (a key ending in '/', as S3 consoles create for folders) is
// the file <root>/a/b/.basin-dir, so "a/b/" and the objects below "a/b/"
// live side by side as they do in a bucket.
//
// Names starting with ".basin-" are reserved: the marker, and the temporary
// files of uploads in progress (".basin-tmp-<random>", created next to their
// target, fsynced, then renamed over it, so readers see the old object or
// the new one, never a part). Listings never show reserved names, and keys
// containing a segment that starts with ".basin-" are refused.
//
// Every method works through an os.Root, so no key and no symbolic link can
// reach outside the root directory.
//
// # Keys a directory cannot hold
//
// Keys are refused with objstore.ErrInvalidKey when a segment is empty
// ("a//b", "/a"), "." or "..", longer than 255 bytes, or reserved, and when
// the key is not valid UTF-8 or holds a NUL byte. Names such as "a..b" or
// "..." are fine. Rejecting "a/../b" instead of cleaning it keeps the
// key-to-path mapping one-to-one: every stored object lists under the key it
// was put with.
//
// A file and a directory cannot share a name, so, unlike in a bucket, "a" and
// "a/b" cannot both exist: the later Put fails with ErrInvalidKey. "a/" (a
// marker) and "a/b" can.
//
// # Versions, listing and deletes
//
// An object's Version hashes its size, modification time (ns), inode and
// device. Every Put or Copy renames a new file into place, so the inode (and
// the version) changes even when size and time do not.
//
// List walks the tree in key order: the entries of a directory are sorted
// with a '/' appended to subdirectory names, because keys such as "a-b" sort
// before "a/x" although the name "a" sorts before "a-b". Directories with no
// object below them are not common prefixes. Symbolic links, devices and
// other non-regular files are not objects: they are neither listed nor
// readable as their own key.
//
// Delete removes the parent directories it leaves empty, up to the root, so
// the tree never keeps prefixes the bucket would not have.
//
// # Admin
//
// NewAdmin manages buckets as directories directly under a root directory
// (Config.Bucket): CreateBucket("vol") makes <root>/vol, which a Store opens
// with Config{Bucket: "<root>/vol"}.
package filestore
