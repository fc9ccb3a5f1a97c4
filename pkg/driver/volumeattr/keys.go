package volumeattr

import (
	"strings"

	"github.com/basin-csi/basin/pkg/mountspec"
)

// Keys of StorageClass parameters and PV volumeAttributes that are not
// mount settings (those are mountspec's: mountspec.KeyBucket and the
// others).
const (
	// KeyProvisioning is how CreateVolume makes a volume: "bucket" (a new
	// bucket per volume) or "prefix" (a new prefix inside bucket).
	KeyProvisioning = "provisioning"
	// KeyReclaim is what DeleteVolume does with the data: "delete" or
	// "retain".
	KeyReclaim = "reclaim"
	// KeyWarmup is a comma-separated list of paths inside the volume ("/"
	// for all of it) that the node plugin reads in the background after
	// NodeStageVolume, so the node's cache holds them before the workload
	// asks.
	KeyWarmup = "warmup"
	// KeyCacheAffinity set to false opts the volume out of cache-aware
	// placement: the controller's admission webhook adds no preference
	// for the nodes that hold its cache. Mounts ignore it.
	KeyCacheAffinity = "cacheAffinity"
	// KeySharedCacheSize and KeySharedCacheMaxAge bound the shared cache
	// tier the volume names (mountspec.KeySharedCache): the controller
	// keeps the tier's objects within this many bytes and deletes those
	// not used for longer, least recently used first. Mounts ignore them.
	KeySharedCacheSize   = "sharedCacheSize"
	KeySharedCacheMaxAge = "sharedCacheMaxAge"
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
	// SecretSharedCacheAccessKeyID and SecretSharedCacheSecretAccessKey
	// are the access key pair of the shared cache tier (the sharedCache
	// attribute); without them the tier uses the default chain.
	SecretSharedCacheAccessKeyID     = "sharedCacheAccessKeyID"
	SecretSharedCacheSecretAccessKey = "sharedCacheSecretAccessKey"
)

// Keys returns the accepted attribute keys, in documentation order: the
// mount settings, then the others.
func Keys() []string {
	keys := mountspec.AttributeKeys()
	for _, f := range fields() {
		keys = append(keys, f.key)
	}
	return keys
}

// SecretKeys returns the accepted secret keys.
func SecretKeys() []string {
	return []string{
		SecretAccessKeyID, SecretSecretAccessKey, SecretSessionToken,
		SecretGCSCredentialsJSON, SecretEndpoint, SecretRegion,
		SecretSharedCacheAccessKeyID, SecretSharedCacheSecretAccessKey,
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
