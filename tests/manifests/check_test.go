package manifests

import (
	"fmt"
	"maps"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
)

// driverName is the CSI driver name the manifests must use.
const driverName = "basin.csi.dev"

// StorageClass parameters naming the secrets csi-provisioner and kubelet
// hand to the driver.
const (
	provisionerSecretName      = "csi.storage.k8s.io/provisioner-secret-name"
	provisionerSecretNamespace = "csi.storage.k8s.io/provisioner-secret-namespace"
	nodeStageSecretName        = "csi.storage.k8s.io/node-stage-secret-name"
	nodeStageSecretNamespace   = "csi.storage.k8s.io/node-stage-secret-namespace"
)

// secretIndex maps "namespace/name" to the data of the Secrets among docs.
func secretIndex(docs []document) map[string]map[string]string {
	idx := map[string]map[string]string{}
	for _, d := range docs {
		s, ok := d.obj.(*corev1.Secret)
		if !ok {
			continue
		}
		m := maps.Clone(s.StringData)
		if m == nil {
			m = map[string]string{}
		}
		for k, v := range s.Data {
			m[k] = string(v)
		}
		idx[s.Namespace+"/"+s.Name] = m
	}
	return idx
}

// secretRef is a reference to a secret by namespace and name.
type secretRef struct{ namespace, name string }

func (r secretRef) String() string { return r.namespace + "/" + r.name }

// checkAttributes runs volumeattr.Parse on every StorageClass parameter map
// and every PersistentVolume volumeAttributes map of Basin, with each
// secret it references; a referenced secret must be among docs.
func checkAttributes(docs []document) []error {
	secrets := secretIndex(docs)
	var errs []error
	parseWith := func(d document, what string, attrs map[string]string, refs []secretRef, mountable bool) {
		if len(refs) == 0 {
			refs = []secretRef{{}} // parse once, without a secret
		}
		for _, ref := range refs {
			var data map[string]string
			if ref.name != "" {
				var ok bool
				if data, ok = secrets[ref.String()]; !ok {
					errs = append(errs, fmt.Errorf("%s: %s references secret %s, which no manifest defines", d, what, ref))
					continue
				}
			}
			a, err := volumeattr.Parse(attrs, data)
			if err == nil && mountable {
				err = a.CheckMountable()
			}
			if err != nil && ref.name != "" {
				err = fmt.Errorf("with secret %s: %w", ref, err)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %s: %w", d, what, err))
			}
		}
	}
	for _, d := range docs {
		switch o := d.obj.(type) {
		case *storagev1.StorageClass:
			if o.Provisioner != driverName {
				continue
			}
			refs, err := storageClassSecrets(o.Parameters)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: StorageClass %s: %w", d, o.Name, err))
			}
			parseWith(d, "StorageClass "+o.Name+" parameters", o.Parameters, refs, false)
		case *corev1.PersistentVolume:
			c := o.Spec.CSI
			if c == nil || c.Driver != driverName {
				continue
			}
			var refs []secretRef
			if r := c.NodeStageSecretRef; r != nil {
				refs = append(refs, secretRef{r.Namespace, r.Name})
			}
			parseWith(d, "PersistentVolume "+o.Name+" volumeAttributes", c.VolumeAttributes, refs, true)
		}
	}
	return errs
}

// storageClassSecrets returns the distinct secrets a StorageClass names.
// Templated names (${pvc.namespace}) cannot be resolved and are skipped.
func storageClassSecrets(params map[string]string) ([]secretRef, error) {
	var refs []secretRef
	for _, keys := range [][2]string{
		{provisionerSecretName, provisionerSecretNamespace},
		{nodeStageSecretName, nodeStageSecretNamespace},
	} {
		name, ns := params[keys[0]], params[keys[1]]
		if (name == "") != (ns == "") {
			return nil, fmt.Errorf("%s and %s go together", keys[0], keys[1])
		}
		r := secretRef{ns, name}
		if name == "" || strings.Contains(name+ns, "${") || (len(refs) > 0 && refs[0] == r) {
			continue
		}
		refs = append(refs, r)
	}
	return refs, nil
}

// podSpecs returns the pod specs of the workloads among docs.
func podSpecs(docs []document) map[string]*corev1.PodSpec {
	specs := map[string]*corev1.PodSpec{}
	for _, d := range docs {
		switch o := d.obj.(type) {
		case *corev1.Pod:
			specs[d.String()+" Pod "+o.Name] = &o.Spec
		case *batchv1.Job:
			specs[d.String()+" Job "+o.Name] = &o.Spec.Template.Spec
		case *batchv1.CronJob:
			specs[d.String()+" CronJob "+o.Name] = &o.Spec.JobTemplate.Spec.Template.Spec
		case *appsv1.Deployment:
			specs[d.String()+" Deployment "+o.Name] = &o.Spec.Template.Spec
		case *appsv1.StatefulSet:
			specs[d.String()+" StatefulSet "+o.Name] = &o.Spec.Template.Spec
		case *appsv1.DaemonSet:
			specs[d.String()+" DaemonSet "+o.Name] = &o.Spec.Template.Spec
		}
	}
	return specs
}

// checkMountPropagation requires mountPropagation: HostToContainer on every
// container mount of a PVC: only then does a container see the mount the
// node plugin re-creates when it heals a dead FUSE mount.
func checkMountPropagation(docs []document) []error {
	var errs []error
	for name, spec := range podSpecs(docs) {
		claims := map[string]bool{}
		for _, v := range spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				claims[v.Name] = true
			}
		}
		for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
			for _, m := range c.VolumeMounts {
				if !claims[m.Name] {
					continue
				}
				if m.MountPropagation == nil || *m.MountPropagation != corev1.MountPropagationHostToContainer {
					errs = append(errs, fmt.Errorf("%s: container %s mounts PVC volume %s without mountPropagation: HostToContainer", name, c.Name, m.Name))
				}
			}
		}
	}
	return errs
}

// basinImage is the placeholder image of the driver, which kustomize's
// images transformer overrides; every other image must be pinned.
const basinImage = "ghcr.io/basin-csi/basin"

// checkImages requires an explicit tag other than latest on every image
// but Basin's own.
func checkImages(docs []document) []error {
	var errs []error
	for name, spec := range podSpecs(docs) {
		for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
			repo, tag := splitImage(c.Image)
			if repo == basinImage || strings.Contains(c.Image, "@sha256:") {
				continue
			}
			if tag == "" || tag == "latest" {
				errs = append(errs, fmt.Errorf("%s: container %s: image %q is not pinned to a version tag", name, c.Name, c.Image))
			}
		}
	}
	return errs
}

// splitImage splits an image reference into repository and tag ("" when
// there is none); a registry's port is not a tag.
func splitImage(image string) (repo, tag string) {
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return image, ""
	}
	return image[:i], image[i+1:]
}
