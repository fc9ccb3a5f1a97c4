package cachestatus

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
)

// Volumes maps a CSI volume handle to the PersistentVolumes that use it.
type Volumes interface {
	// Synced reports whether the first listing arrived: before it, a
	// volume without a PersistentVolume may only not be known yet.
	Synced() bool
	// PersistentVolumes lists the names of the driver's PersistentVolumes
	// with this handle, sorted (static volumes may share a handle).
	PersistentVolumes(handle string) []string
}

// handleIndex is the informer index of PersistentVolumes by handle.
const handleIndex = "volumeHandle"

// PVIndex is Volumes over an informer on PersistentVolumes: the node
// plugin gets a volume handle from kubelet, never the PersistentVolume's
// name.
type PVIndex struct {
	// constant
	factory informers.SharedInformerFactory
	inf     toolscache.SharedIndexInformer
}

var _ Volumes = (*PVIndex)(nil)

// NewPVIndex returns the index of driver's PersistentVolumes; Run fills
// it. It keeps only the names and handles of the volumes.
func NewPVIndex(cs kubernetes.Interface, driver string) (*PVIndex, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTransform(slimPV))
	inf := factory.Core().V1().PersistentVolumes().Informer()
	err := inf.AddIndexers(toolscache.Indexers{handleIndex: func(obj any) ([]string, error) {
		pv, ok := obj.(*corev1.PersistentVolume)
		if !ok || pv.Spec.CSI == nil || pv.Spec.CSI.Driver != driver {
			return nil, nil
		}
		return []string{pv.Spec.CSI.VolumeHandle}, nil
	}})
	if err != nil {
		return nil, err
	}
	return &PVIndex{factory: factory, inf: inf}, nil
}

// slimPV drops all of a PersistentVolume but its name and CSI source, so
// that a node's copy of thousands of volumes stays small.
func slimPV(obj any) (any, error) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok {
		return obj, nil // a tombstone
	}
	out := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{
		Name: pv.Name, UID: pv.UID, ResourceVersion: pv.ResourceVersion,
	}}
	if c := pv.Spec.CSI; c != nil {
		out.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: c.Driver, VolumeHandle: c.VolumeHandle}
	}
	return out, nil
}

// Run lists and watches until ctx ends.
func (x *PVIndex) Run(ctx context.Context) {
	x.factory.Start(ctx.Done())
	<-ctx.Done()
	x.factory.Shutdown()
}

// Synced reports whether the first listing arrived.
func (x *PVIndex) Synced() bool { return x.inf.HasSynced() }

// PersistentVolumes lists the names of the PersistentVolumes of handle.
func (x *PVIndex) PersistentVolumes(handle string) []string {
	objs, err := x.inf.GetIndexer().ByIndex(handleIndex, handle)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(objs))
	for _, o := range objs {
		if pv, ok := o.(*corev1.PersistentVolume); ok {
			names = append(names, pv.Name)
		}
	}
	slices.Sort(names)
	return names
}
