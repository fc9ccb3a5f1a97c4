package volumeattr

import "strings"

// Keys of StorageClass parameters and PV volumeAttributes.
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
	// KeyProvisioning is how CreateVolume makes a volume: "bucket" (a new
	// bucket per volume) or "prefix" (a new prefix inside bucket).
	KeyProvisioning = "provisioning"
	// KeyReclaim is what DeleteVolume does with the data: "delete" or
	// "retain".
	KeyReclaim = "reclaim"
	// KeyMountOptions is a comma-separated list of mount options of the
	// volume's FUSE mount, from mountspec.AcceptedOptions (ro, rw, noexec,
	// exec, noatime, and the always-on nosuid, nodev, allow_other,
	// default_permissions).
	KeyMountOptions = "mountOptions"
	// KeyWarmup is a comma-separated list of paths inside the volume ("/"
	// for all of it) that the node plugin reads in the background after
	// NodeStageVolume, so the node's cache holds them before the workload
	// asks.
	KeyWarmup = "warmup"
	// KeyCacheAffinity set to false opts the volume out of cache-aware
	// placement: the controller's admission webhook adds no preference
	// for the nodes that hold its cache. Mounts ignore it.
	KeyCacheAffinity = "cacheAffinity"
)

// Keys of the secret (the provisioner secret for CreateVolume and
// DeleteVolume, the node-stage secret for NodeStageVolume).
const (
	// SecretAccessKeyID and SecretSecretAccessKey are an S3/OSS access key
	// pair; SecretSessionToken is the optional STS session token.
	SecretAccessKeyID     = "accessKeyID"
	SecretSecretAccessKey = "secretAccessKey"
	SecretSessionToken    = "sessionToken"
	// SecretGCSCredentialsJSON is a GCS service-account (or external
	// account) key file, the JSON text itself.
	SecretGCSCredentialsJSON = "gcsCredentialsJSON"
	// SecretEndpoint and SecretRegion are not secret. They may live in the
	// secret so that DeleteVolume, which receives only the volume ID and
	// the secret, can reach the store; a value given both here and in the
	// parameters must agree.
	SecretEndpoint = "endpoint"
	SecretRegion   = "region"
)

// Keys returns the accepted attribute keys, in documentation order.
func Keys() []string {
	return []string{
		KeyBackend, KeyBucket, KeyPrefix, KeyEndpoint, KeyRegion, KeyPathStyle, KeyProject,
		KeyCacheSize, KeyCacheBlockSize, KeyMetadataTTL, KeyNegativeMetadataTTL, KeyReadAhead,
		KeyMaxParallelFetches, KeyPrefetch, KeyPrefetchBudget, KeyUID, KeyGID, KeyFileMode, KeyDirMode, KeyReadOnly,
		KeyOpenMode, KeyProvisioning, KeyReclaim, KeyMountOptions, KeyWarmup, KeyCacheAffinity,
	}
}

// SecretKeys returns the accepted secret keys.
func SecretKeys() []string {
	return []string{
		SecretAccessKeyID, SecretSecretAccessKey, SecretSessionToken,
		SecretGCSCredentialsJSON, SecretEndpoint, SecretRegion,
	}
}

// Prefixes of the keys Kubernetes itself adds to parameters and volume
// attributes: csi.storage.k8s.io/pvc/name and friends (csi-provisioner
// --extra-create-metadata), csi.storage.k8s.io/pod.name and friends
// (podInfoOnMount), storage.kubernetes.io/csiProvisionerIdentity (added to
// every dynamically provisioned PV).
const (
	k8sCSIPrefix     = "csi.storage.k8s.io/"
	k8sStoragePrefix = "storage.kubernetes.io/"
)

// IsKubernetesKey reports whether key is one Kubernetes adds on its own;
// Parse ignores those.
func IsKubernetesKey(key string) bool {
	return strings.HasPrefix(key, k8sCSIPrefix) || strings.HasPrefix(key, k8sStoragePrefix)
}
