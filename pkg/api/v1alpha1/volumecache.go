package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VolumeCache is what one node's cache holds of one Basin volume. It is
// cluster-scoped (like the PersistentVolume and the Node it joins), named
// after both (see the node plugin's reporter), labelled with LabelVolume
// and LabelNode, and owned by its Node, so that deleting the node deletes
// it.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=vcache,categories=basin
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Volume",type=string,JSONPath=`.spec.volumeName`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeName`
// +kubebuilder:printcolumn:name="Cached",type=string,JSONPath=`.status.cachedSize`
// +kubebuilder:printcolumn:name="Objects",type=integer,JSONPath=`.status.cachedObjects`
// +kubebuilder:printcolumn:name="Percent",type=integer,JSONPath=`.status.cachedPercent`
// +kubebuilder:printcolumn:name="Pending-Uploads",type=integer,JSONPath=`.status.pendingUploads`,priority=1
// +kubebuilder:printcolumn:name="Last-Use",type=date,JSONPath=`.status.lastUseTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VolumeCache struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   VolumeCacheSpec   `json:"spec"`
	Status VolumeCacheStatus `json:"status,omitempty"`
}

// VolumeCacheSpec names the volume and the node; it never changes.
type VolumeCacheSpec struct {
	// VolumeName is the PersistentVolume's name.
	// +kubebuilder:validation:MinLength=1
	VolumeName string `json:"volumeName"`
	// VolumeHandle is the CSI volume handle (the bucket and prefix).
	// +optional
	VolumeHandle string `json:"volumeHandle,omitempty"`
	// NodeName is the node whose cache this is.
	// +kubebuilder:validation:MinLength=1
	NodeName string `json:"nodeName"`
}

// VolumeCacheStatus is the cache's content as of UpdateTime.
type VolumeCacheStatus struct {
	// CachedBytes is the volume's data held by the node's cache.
	CachedBytes int64 `json:"cachedBytes"`
	// CachedSize is CachedBytes for people (for example "1.5Gi").
	// +optional
	CachedSize string `json:"cachedSize,omitempty"`
	// CachedObjects counts the objects with data in the cache.
	CachedObjects int64 `json:"cachedObjects"`
	// DatasetBytes and DatasetObjects are the size of the whole volume
	// where the node knows it (after a warmup or a full listing).
	// +optional
	DatasetBytes *int64 `json:"datasetBytes,omitempty"`
	// +optional
	DatasetObjects *int64 `json:"datasetObjects,omitempty"`
	// CachedPercent is CachedBytes as a share of DatasetBytes, 0-100,
	// where DatasetBytes is known.
	// +optional
	CachedPercent *int32 `json:"cachedPercent,omitempty"`
	// CapacityBytes is the cache's size limit on the node (shared by the
	// volumes whose cache directory is on the same disk, if so).
	// +optional
	CapacityBytes int64 `json:"capacityBytes,omitempty"`
	// LastUseTime is when a reader last read the volume on the node.
	// +optional
	LastUseTime *metav1.Time `json:"lastUseTime,omitempty"`
	// SharedCacheDegraded is true while the volume's shared cache tier
	// (the sharedCache attribute) fails on the node: its reads go to the
	// bucket.
	// +optional
	SharedCacheDegraded bool `json:"sharedCacheDegraded,omitempty"`
	// PendingUploads counts the files whose close returned on the node
	// and that are not in the bucket yet (uploadMode async).
	// +optional
	PendingUploads int64 `json:"pendingUploads,omitempty"`
	// PendingUploadBytes is the size of those files.
	// +optional
	PendingUploadBytes int64 `json:"pendingUploadBytes,omitempty"`
	// UploadFailures counts the failed background upload attempts since
	// the volume's FUSE process started; each upload is retried until it
	// succeeds, so a count that grows while PendingUploads stays above
	// zero means the bucket refuses or cannot take the uploads.
	// +optional
	UploadFailures int64 `json:"uploadFailures,omitempty"`
	// CreateConflicts counts the files created with O_EXCL in uploadMode
	// async whose upload met another writer's object under the same name:
	// that object was kept as "<name>.conflict-<time>".
	// +optional
	CreateConflicts int64 `json:"createConflicts,omitempty"`
	// SharedWith names the other PersistentVolumes whose data on the
	// node is this same cache: read-only volumes of one source share one
	// FUSE process and cache there. CachedBytes and CachedObjects count
	// those bytes once for all of them; add them up once per cache.
	// +optional
	SharedWith []string `json:"sharedWith,omitempty"`
	// UpdateTime is when the node plugin last wrote this status.
	UpdateTime metav1.Time `json:"updateTime"`
}

// VolumeCacheList is a list of VolumeCache.
//
// +kubebuilder:object:root=true
type VolumeCacheList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VolumeCache `json:"items"`
}
