package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of this package's types.
var GroupVersion = schema.GroupVersion{Group: "basin.csi.dev", Version: "v1alpha1"}

// Labels and annotations Basin sets or reads on API objects.
const (
	// LabelVolume on a VolumeCache names its PersistentVolume.
	LabelVolume = "basin.csi.dev/volume"
	// LabelNode on a VolumeCache names its node.
	LabelNode = "basin.csi.dev/node"
	// LabelCacheAffinity set to "false" on a pod opts it out of
	// cache-aware placement.
	LabelCacheAffinity = "basin.csi.dev/cache-affinity"
	// AnnotationCacheAffinity on a pod says why the admission webhook did
	// or did not prefer nodes for it (shown by kubectl describe).
	AnnotationCacheAffinity = "basin.csi.dev/cache-affinity"
)

// AddToScheme registers this package's types with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&VolumeCache{}, &VolumeCacheList{},
		&Warmup{}, &WarmupList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
