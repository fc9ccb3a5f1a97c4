package mountspec

// Keys of the mount settings among a volume's attributes (StorageClass
// parameters, PV volumeAttributes). They are also the Spec's JSON field
// names; `csi-driver mount` spells them as flags in kebab case
// (metadataTTL: --metadata-ttl).
const (
	// KeyBackend selects the object store: s3, oss, gcs or file. Default s3.
	KeyBackend = "backend"
	// KeyBucket is the bucket name; for the file backend the absolute
	// directory that plays the bucket.
	KeyBucket = "bucket"
	// KeyPrefix roots the volume at a key prefix ("directory") of the
	// bucket. With provisioning=prefix it is the parent of the per-volume
	// prefixes.
	KeyPrefix = "prefix"
	// KeyEndpoint is the store's URL (MinIO, OSS region endpoint,
	// fake-gcs-server); empty means the backend's own.
	KeyEndpoint = "endpoint"
	// KeyRegion is the S3/OSS signing region, or the GCS location of
	// buckets the controller creates.
	KeyRegion = "region"
	// KeyPathStyle addresses S3 buckets as endpoint/bucket (MinIO).
	KeyPathStyle = "pathStyle"
	// KeyProject is the GCS project that owns buckets the controller
	// creates.
	KeyProject = "project"
	// KeyCacheSize caps the node-local cache of the volume (quantity).
	KeyCacheSize = "cacheSize"
	// KeyCacheBlockSize is the cache's block size (quantity, multiple of
	// 4Ki).
	KeyCacheBlockSize = "cacheBlockSize"
	// KeyMetadataTTL is how long attributes and listings are trusted.
	KeyMetadataTTL = "metadataTTL"
	// KeyNegativeMetadataTTL is how long "no such file" is trusted.
	KeyNegativeMetadataTTL = "negativeMetadataTTL"
	// KeyReadAhead is the largest prefetch window of a sequential reader
	// (quantity; 0 disables prefetching).
	KeyReadAhead = "readAhead"
	// KeyMaxParallelFetches bounds the concurrent GETs of one mount.
	KeyMaxParallelFetches = "maxParallelFetches"
	// KeyPrefetch set to false turns directory prefetch off: fetching the
	// other small files of a directory a reader opens files of.
	KeyPrefetch = "prefetch"
	// KeyPrefetchBudget bounds the bytes prefetched that no reader
	// opened since (quantity).
	KeyPrefetchBudget = "prefetchBudget"
	// KeyBufferSize bounds the memory of the block buffers of one mount
	// (quantity).
	KeyBufferSize = "bufferSize"
	// KeyOpTimeout bounds the bucket requests of one file system
	// operation. Only `csi-driver mount` sets it (--op-timeout); it is
	// not a volume attribute.
	KeyOpTimeout = "opTimeout"
	// KeyUID and KeyGID own every file; unset means the FUSE process's own.
	KeyUID = "uid"
	KeyGID = "gid"
	// KeyFileMode and KeyDirMode are octal permission bits.
	KeyFileMode = "fileMode"
	KeyDirMode  = "dirMode"
	// KeyReadOnly makes the volume read-only (every change fails with
	// EROFS).
	KeyReadOnly = "readOnly"
	// KeyOpenMode is who opens regular files: "server" (every open is a
	// FUSE OPEN) or "kernel" (the kernel opens them itself; read-only
	// mounts only).
	KeyOpenMode = "openMode"
	// KeyUploadMode is when a written file goes to the bucket: "sync"
	// (inside close(2), the default) or "async" (close returns once the
	// content is staged durably on the node's disk; the upload follows in
	// the background).
	KeyUploadMode = "uploadMode"
	// KeyMountOptions is a comma-separated list of mount options of the
	// volume's FUSE mount, from AcceptedOptions (ro, rw, noexec, exec,
	// noatime, and the always-on nosuid, nodev, allow_other,
	// default_permissions).
	KeyMountOptions = "mountOptions"
	// KeyRcloneLinks reads and writes symbolic links as rclone's --links
	// (-l) stores them: an object NAME.rclonelink whose body is the
	// target is the link NAME. Off by default: a bucket may hold real
	// files with that suffix.
	KeyRcloneLinks = "rcloneLinks"
	// KeySharedCache is the shared cache tier, an S3-compatible bucket
	// near the compute that the nodes read blocks from before the origin:
	// http(s)://host[:port]/bucket[/prefix] or s3://bucket[/prefix]. Its
	// credentials are the secret's sharedCacheAccessKeyID and
	// sharedCacheSecretAccessKey.
	KeySharedCache = "sharedCache"
	// KeySharedCacheRegion is the shared cache tier's signing region when
	// it differs from region (an S3 Express One Zone bucket of another
	// region than the origin's, a tier beside a GCS origin).
	KeySharedCacheRegion = "sharedCacheRegion"
)

// AttributeKeys returns the keys of the mount settings a volume attribute
// can set, in documentation order.
func AttributeKeys() []string {
	var keys []string
	for _, st := range settings() {
		if st.attribute {
			keys = append(keys, st.key)
		}
	}
	return keys
}
