package warmupctl

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
)

// Labels of the warmup pods.
const (
	// labelWarmupUID names the pod's Warmup by UID (a name may be too
	// long for a label value).
	labelWarmupUID = "basin.csi.dev/warmup-uid"
	// labelRun is the run (Status.Runs) the pod belongs to.
	labelRun = "basin.csi.dev/warmup-run"
	// annotationNode is the node the pod is pinned to.
	annotationNode = "basin.csi.dev/warmup-node"
	appName        = "basin-warmup"
	// dataDir is where a pod mounts the claim.
	dataDir = "/data"
	// runAsID is the warmup pods' user and group (the image's nonroot).
	runAsID = 65532
)

// podImage is the image warmup pods run and its pull policy.
type podImage struct {
	Image      string
	PullPolicy corev1.PullPolicy
}

// podName is the pod of run on node: the Warmup's name (cut short), the
// run and a hash of the node's name, so that names never clash.
func podName(w *basinv1.Warmup, run int32, node string) string {
	sum := sha256.Sum256([]byte(node))
	name := w.Name
	if len(name) > 40 {
		name = name[:40]
	}
	return fmt.Sprintf("%s-warmup-%d-%s", name, run, hex.EncodeToString(sum[:4]))
}

// warmupPod is the pod of run on node: owned by w (controller), pinned to
// node by required node affinity on its name (so taints and the
// scheduler's checks apply), the claim mounted read-only, non-root with a
// restricted security context.
func warmupPod(w *basinv1.Warmup, run int32, node string, img podImage) *corev1.Pod {
	owner := metav1.NewControllerRef(w, basinv1.GroupVersion.WithKind("Warmup"))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      podName(w, run, node),
			Namespace: w.Namespace,
			Labels: map[string]string{
				"app.kubernetes.io/name":       appName,
				"app.kubernetes.io/part-of":    "basin",
				"app.kubernetes.io/managed-by": "basin-warmup-controller",
				labelWarmupUID:                 string(w.UID),
				labelRun:                       strconv.Itoa(int(run)),
			},
			Annotations:     map[string]string{annotationNode: node},
			OwnerReferences: []metav1.OwnerReference{*owner},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](10),
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
						Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node},
					}}}},
				},
			}},
			Tolerations: w.Spec.Tolerations,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](runAsID),
				RunAsGroup:     ptr.To[int64](runAsID),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:                     "warmup",
				Image:                    img.Image,
				ImagePullPolicy:          img.PullPolicy,
				Args:                     PodArgs(&w.Spec),
				Resources:                w.Spec.Resources,
				TerminationMessagePath:   corev1.TerminationMessagePathDefault,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				VolumeMounts: []corev1.VolumeMount{{
					Name: "data", MountPath: dataDir, ReadOnly: true,
					// As in every Basin mount: a healed FUSE mount reaches
					// the container only with HostToContainer.
					MountPropagation: ptr.To(corev1.MountPropagationHostToContainer),
				}},
			}},
			Volumes: []corev1.Volume{{
				Name: "data",
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
					ClaimName: w.Spec.ClaimName, ReadOnly: true,
				}},
			}},
		},
	}
}

// PodCacheSelector selects the pods the controller watches (its own warmup
// pods): the manager caches those only, not every pod of the cluster.
func PodCacheSelector() labels.Selector {
	req, err := labels.NewRequirement(labelWarmupUID, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant key: cannot fail
	}
	return labels.NewSelector().Add(*req)
}
