package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Warmup preloads a Basin volume into the caches of chosen nodes. Its
// controller starts one pod per node that mounts the claim and runs
// csi-driver warmup, reports what they did, and deletes them when the run
// ends. `kubectl wait --for=condition=Complete warmup/NAME` waits for a run.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=bwarm,categories=basin
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Claim",type=string,JSONPath=`.spec.claimName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Nodes",type=string,JSONPath=`.status.nodesSummary`
// +kubebuilder:printcolumn:name="Files",type=integer,JSONPath=`.status.files`
// +kubebuilder:printcolumn:name="Bytes",type=string,JSONPath=`.status.size`
// +kubebuilder:printcolumn:name="Fits",type=string,JSONPath=`.status.fits`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Warmup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WarmupSpec   `json:"spec"`
	Status WarmupStatus `json:"status,omitempty"`
}

// WarmupSpec says what to load and where. Any change of the spec starts a
// new run; to run again without other change, set Rerun to a new value.
type WarmupSpec struct {
	// ClaimName is a PersistentVolumeClaim of a Basin volume in the
	// Warmup's namespace.
	// +kubebuilder:validation:MinLength=1
	ClaimName string `json:"claimName"`
	// Paths inside the volume to load; empty loads everything.
	// +optional
	Paths []string `json:"paths,omitempty"`
	// MetadataOnly loads listings and attributes, not file contents.
	// +optional
	MetadataOnly bool `json:"metadataOnly,omitempty"`
	// Threads per node (csi-driver warmup --threads); 0 takes its default.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=256
	// +optional
	Threads int32 `json:"threads,omitempty"`
	// Nodes chooses the nodes to load.
	Nodes WarmupNodes `json:"nodes"`
	// Target is where the data is loaded: "node" (the default: the
	// chosen nodes' caches) or "shared" (the volume's shared cache tier,
	// its sharedCache attribute: one node, the first Nodes chooses, reads
	// the data once through its mount, which stores what it fetches in
	// the tier for every node).
	// +kubebuilder:validation:Enum=node;shared
	// +optional
	Target string `json:"target,omitempty"`
	// Schedule runs the warmup again on a cron schedule (five fields, for
	// example "0 2 * * *"), in the controller's time zone (UTC).
	// +optional
	Schedule string `json:"schedule,omitempty"`
	// Rerun: a new value starts a new run (for example a timestamp).
	// +optional
	Rerun string `json:"rerun,omitempty"`
	// Tolerations and Resources of the warmup pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// WarmupNodes chooses nodes. Selector and JobName are exclusive; Count
// limits the choice (nodes already holding most of the volume first).
// With neither, every schedulable node is chosen.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.selector) && has(self.jobName))",message="selector and jobName are exclusive"
type WarmupNodes struct {
	// Selector chooses nodes by their labels.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// Count is the number of nodes to load (at most).
	// +kubebuilder:validation:Minimum=1
	// +optional
	Count *int32 `json:"count,omitempty"`
	// JobName chooses the nodes a Job of the Warmup's namespace will run
	// on: those its pod template's node selector and required node
	// affinity allow, as many as its parallelism unless Count says
	// otherwise.
	// +optional
	JobName string `json:"jobName,omitempty"`
}

// Values of WarmupSpec.Target.
const (
	WarmupTargetNode   = "node"
	WarmupTargetShared = "shared"
)

// SharedCacheAttribute is the volume attribute naming a volume's shared
// cache tier (pkg/mountspec KeySharedCache), which a Warmup with target
// shared requires.
const SharedCacheAttribute = "sharedCache"

// Warmup phases.
const (
	WarmupPending  = "Pending"
	WarmupRunning  = "Running"
	WarmupComplete = "Complete"
	WarmupFailed   = "Failed"
)

// Values of WarmupStatus.Fits and WarmupNodeStatus.Fits.
const (
	FitsYes     = "Yes"
	FitsNo      = "No"
	FitsUnknown = "Unknown"
)

// Warmup condition types.
const (
	// ConditionComplete is True when the last run loaded every node.
	ConditionComplete = "Complete"
	// ConditionFailed is True when the last run failed on a node.
	ConditionFailed = "Failed"
	// ConditionFits is True when the data fits every chosen node's cache,
	// False when it does not, Unknown until a node has reported.
	ConditionFits = "Fits"
)

// WarmupStatus is the state of the current or last run.
type WarmupStatus struct {
	// Phase is Pending, Running, Complete or Failed.
	// +optional
	Phase string `json:"phase,omitempty"`
	// ObservedGeneration is the generation the run was started for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ObservedRerun is the Rerun value the run was started for.
	// +optional
	ObservedRerun string `json:"observedRerun,omitempty"`
	// Runs counts the runs started.
	// +optional
	Runs int32 `json:"runs,omitempty"`
	// StartTime and CompletionTime of the current or last run.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// NextScheduleTime is when Schedule starts the next run.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`
	// Files, Bytes and BytesPerSecond sum the nodes' figures.
	// +optional
	Files int64 `json:"files,omitempty"`
	// +optional
	Bytes int64 `json:"bytes,omitempty"`
	// Size is Bytes for people (for example "1.5Gi").
	// +optional
	Size string `json:"size,omitempty"`
	// +optional
	BytesPerSecond int64 `json:"bytesPerSecond,omitempty"`
	// Fits is "Yes", "No" or "Unknown": whether the data fits every
	// chosen node's cache.
	// +optional
	Fits string `json:"fits,omitempty"`
	// NodesSummary is "done/chosen" for people.
	// +optional
	NodesSummary string `json:"nodesSummary,omitempty"`
	// Nodes has one entry per chosen node.
	// +optional
	// +listType=map
	// +listMapKey=nodeName
	Nodes []WarmupNodeStatus `json:"nodes,omitempty"`
	// Conditions: Complete, Failed, Fits.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WarmupNodeStatus is one node's part of a run.
type WarmupNodeStatus struct {
	NodeName string `json:"nodeName"`
	// Phase is Pending, Running, Complete or Failed.
	Phase string `json:"phase"`
	// PodName is the warmup pod on the node (deleted when the run ends).
	// +optional
	PodName string `json:"podName,omitempty"`
	// +optional
	Files int64 `json:"files,omitempty"`
	// +optional
	Bytes int64 `json:"bytes,omitempty"`
	// +optional
	BytesPerSecond int64 `json:"bytesPerSecond,omitempty"`
	// +optional
	Errors int64 `json:"errors,omitempty"`
	// Fits is "Yes", "No" or "Unknown" for this node's cache.
	// +optional
	Fits string `json:"fits,omitempty"`
	// Message is the warmup's own verdict or the reason of a failure.
	// +optional
	Message string `json:"message,omitempty"`
}

// WarmupList is a list of Warmup.
//
// +kubebuilder:object:root=true
type WarmupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Warmup `json:"items"`
}
