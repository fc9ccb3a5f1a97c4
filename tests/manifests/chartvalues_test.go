package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// TestChartRejectsMistypedValues: values.schema.json stops a mistyped or
// misspelt value at helm template and lint, with a message that names it.
// helm install validates with the same schema but reaches for a cluster
// first (even with --dry-run=client): the cluster suite checks it there
// (tests/k8s, TestHelmInstallRejectsMistypedValue).
func TestChartRejectsMistypedValues(t *testing.T) {
	tests := []struct{ values, names string }{
		{"kubeletDir: 5\n", "kubeletDir"},
		{"kubeletDir: var/lib/kubelet\n", "kubeletDir"},
		{"kubeletdir: /var/lib/kubelet\n", "kubeletdir"},
		{"logVerbosity: \"2\"\n", "logVerbosity"},
		{"image: {pullPolicy: Sometimes}\n", "pullPolicy"},
		{"node: {tolerations: {operator: Exists}}\n", "tolerations"},
		{"node: {resources: {requests: {cpu: true}}}\n", "cpu"},
		{"orchestration: {warmup: {enabled: \"no\"}}\n", "enabled"},
		{"storageClasses: [{name: s3, parameters: {bucket: b, cacheSize: 10}}]\n", "cacheSize"},
		{"storageClasses: [{parameters: {bucket: b}}]\n", "name"},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSpace(tt.values), func(t *testing.T) {
			for _, cmd := range [][]string{
				{"template", "basin", chartDir},
				{"lint", "--strict", chartDir},
			} {
				_, err := helm(t, append(cmd, valuesFile(t, tt.values)...)...)
				if err == nil {
					t.Errorf("helm %s accepted %q", cmd[0], tt.values)
					continue
				}
				if !strings.Contains(err.Error(), tt.names) {
					t.Errorf("helm %s: the error does not name %s: %v", cmd[0], tt.names, err)
				}
				if cmd[0] == "template" {
					t.Logf("%v", err)
				}
			}
		})
	}
}

// TestChartKubeletDir: a non-default kubeletDir moves every kubelet path
// of the node plugin (hostPaths, the mount inside the container, the
// registration path), and leaves none at the default.
func TestChartKubeletDir(t *testing.T) {
	const dir = "/var/lib/k0s/kubelet"
	def, err := helmTemplate(t, "")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(def, []byte(defaultKubeletDir)); n < 5 {
		t.Fatalf("the default rendering names %s %d times, want every kubelet path (5)", defaultKubeletDir, n)
	}
	for _, values := range []string{"kubeletDir: " + dir + "\n", "kubeletDir: " + dir + "/\n"} {
		out, err := helmTemplate(t, values)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(out, []byte(defaultKubeletDir)) {
			t.Errorf("%s: the rendering still names %s", strings.TrimSpace(values), defaultKubeletDir)
		}
		for _, err := range checkNodePlugin(renderedDaemonSet(t, values, "basin-node"), dir) {
			t.Errorf("%s: %v", strings.TrimSpace(values), err)
		}
	}
}

// renderedDaemonSet renders the chart with values and returns the
// DaemonSet of that name.
func renderedDaemonSet(t *testing.T, values, name string) *appsv1.DaemonSet {
	t.Helper()
	for _, d := range renderChart(t, values) {
		if o, ok := d.obj.(*appsv1.DaemonSet); ok && o.Name == name {
			return o
		}
	}
	t.Fatalf("no DaemonSet %s rendered", name)
	return nil
}

// rendered indexes rendered objects by "Kind/name".
func rendered(t *testing.T, values string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, d := range renderChart(t, values) {
		n, ok := d.obj.(interface{ GetName() string })
		if !ok {
			t.Fatalf("%s: %T has no name", d, d.obj)
		}
		out[kindOf(d.obj)+"/"+n.GetName()] = d.obj
	}
	return out
}

// TestChartToggles: each orchestration part and the FUSE standby turn
// off with their value, objects and flags together.
func TestChartToggles(t *testing.T) {
	controllerArgs := func(objs map[string]any) []string {
		d, ok := objs["Deployment/basin-controller"].(*appsv1.Deployment)
		if !ok {
			t.Fatal("no Deployment basin-controller")
		}
		return d.Spec.Template.Spec.Containers[0].Args
	}
	nodeArgs := func(objs map[string]any) []string {
		return objs["DaemonSet/basin-node"].(*appsv1.DaemonSet).Spec.Template.Spec.Containers[0].Args
	}
	ruleFor := func(objs map[string]any, role, resource string) bool {
		r, ok := objs["ClusterRole/"+role].(*rbacv1.ClusterRole)
		return ok && slices.ContainsFunc(r.Rules, func(p rbacv1.PolicyRule) bool { return slices.Contains(p.Resources, resource) })
	}
	on := rendered(t, "")
	for _, k := range []string{"MutatingWebhookConfiguration/basin-placement", "Service/basin-placement", "ValidatingAdmissionPolicy/basin-node-volumecaches", "ClusterRole/basin-node", "ClusterRole/basin-orchestrator"} {
		if on[k] == nil {
			t.Errorf("defaults: no %s", k)
		}
	}
	if a := controllerArgs(on); !slices.Contains(a, "--orchestrate") || slices.ContainsFunc(a, func(s string) bool { return strings.HasSuffix(s, "=false") }) {
		t.Errorf("defaults: controller args %v", a)
	}
	if a := nodeArgs(on); !slices.Contains(a, "--report-cache-status") || slices.Contains(a, "--fuse-standby=false") {
		t.Errorf("defaults: node args %v", a)
	}

	off := rendered(t, "orchestration: {enabled: false}\n")
	for _, k := range []string{"MutatingWebhookConfiguration/basin-placement", "Service/basin-placement", "ClusterRole/basin-orchestrator", "Role/basin-orchestrator"} {
		if off[k] != nil {
			t.Errorf("orchestration off: %s rendered", k)
		}
	}
	if a := controllerArgs(off); slices.Contains(a, "--orchestrate") {
		t.Errorf("orchestration off: controller args %v", a)
	}

	noWebhook := rendered(t, "orchestration: {placementWebhook: {enabled: false}}\n")
	if noWebhook["MutatingWebhookConfiguration/basin-placement"] != nil || noWebhook["Service/basin-placement"] != nil {
		t.Error("placement webhook off: its configuration or Service rendered")
	}
	if a := controllerArgs(noWebhook); !slices.Contains(a, "--placement-webhook=false") {
		t.Errorf("placement webhook off: controller args %v", a)
	}
	if ruleFor(noWebhook, "basin-orchestrator", "mutatingwebhookconfigurations") || !ruleFor(on, "basin-orchestrator", "mutatingwebhookconfigurations") {
		t.Error("the orchestrator may patch the webhook's configuration exactly when the webhook is on")
	}

	noWarmup := rendered(t, "orchestration: {warmup: {enabled: false}}\n")
	if a := controllerArgs(noWarmup); !slices.Contains(a, "--warmup-controller=false") {
		t.Errorf("warmup off: controller args %v", a)
	}
	if ruleFor(noWarmup, "basin-orchestrator", "warmups") || !ruleFor(on, "basin-orchestrator", "warmups") {
		t.Error("the orchestrator may read Warmups exactly when the Warmup controller is on")
	}

	noStatus := rendered(t, "orchestration: {cacheStatus: {enabled: false}}\n")
	for _, k := range []string{"ValidatingAdmissionPolicy/basin-node-volumecaches", "ValidatingAdmissionPolicyBinding/basin-node-volumecaches", "ClusterRole/basin-node", "ClusterRoleBinding/basin-node"} {
		if noStatus[k] != nil {
			t.Errorf("cache status off: %s rendered", k)
		}
	}
	if a := nodeArgs(noStatus); slices.Contains(a, "--report-cache-status") {
		t.Errorf("cache status off: node args %v", a)
	}

	if a := nodeArgs(rendered(t, "node: {fuseStandby: false}\n")); !slices.Contains(a, "--fuse-standby=false") {
		t.Errorf("standby off: node args %v", a)
	}
}

// TestChartPerComponentValues: image, pull secrets, verbosity and each
// component's placement and resources reach the pods they belong to, and
// no other.
func TestChartPerComponentValues(t *testing.T) {
	const values = `
image: {repository: registry.example.com/basin, tag: v9.9.9, pullPolicy: IfNotPresent, pullSecrets: [{name: regcred}]}
logVerbosity: 5
controller:
  priorityClassName: ctl-prio
  nodeSelector: {pool: system}
  tolerations: [{key: ctl, operator: Exists}]
  resources: {requests: {cpu: 50m}}
node:
  priorityClassName: node-prio
  nodeSelector: {pool: gpu}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: basin, operator: In, values: ["yes"]}]}]}}}
  resources: {requests: {cpu: "2", memory: 1Gi}}
fdholder:
  priorityClassName: holder-prio
  nodeSelector: {pool: gpu}
  resources: {requests: {cpu: 1m}}
`
	objs := rendered(t, values)
	specs := map[string]*corev1.PodSpec{
		"controller": &objs["Deployment/basin-controller"].(*appsv1.Deployment).Spec.Template.Spec,
		"node":       &objs["DaemonSet/basin-node"].(*appsv1.DaemonSet).Spec.Template.Spec,
		"fdholder":   &objs["DaemonSet/basin-fdholder"].(*appsv1.DaemonSet).Spec.Template.Spec,
	}
	want := map[string]struct{ prio, pool, cpu string }{
		"controller": {"ctl-prio", "system", "50m"}, "node": {"node-prio", "gpu", "2"}, "fdholder": {"holder-prio", "gpu", "1m"},
	}
	for name, spec := range specs {
		w := want[name]
		if spec.PriorityClassName != w.prio || spec.NodeSelector["pool"] != w.pool {
			t.Errorf("%s: priorityClassName %q nodeSelector %v, want %s and pool=%s", name, spec.PriorityClassName, spec.NodeSelector, w.prio, w.pool)
		}
		if len(spec.ImagePullSecrets) != 1 || spec.ImagePullSecrets[0].Name != "regcred" {
			t.Errorf("%s: imagePullSecrets %v", name, spec.ImagePullSecrets)
		}
		c := spec.Containers[0]
		if c.Image != "registry.example.com/basin:v9.9.9" || c.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("%s: image %s pull policy %q", name, c.Image, c.ImagePullPolicy)
		}
		if got := c.Resources.Requests.Cpu().String(); got != w.cpu {
			t.Errorf("%s: cpu request %s, want %s", name, got, w.cpu)
		}
		if name != "fdholder" && !slices.Contains(c.Args, "--v=5") {
			t.Errorf("%s: args %v lack --v=5", name, c.Args)
		}
	}
	if tl := specs["node"].Tolerations; len(tl) != 1 || tl[0].Key != "nvidia.com/gpu" {
		t.Errorf("node tolerations %v", tl)
	}
	if specs["node"].Affinity == nil || specs["controller"].Affinity != nil || specs["fdholder"].Affinity != nil {
		t.Error("the node plugin's affinity went elsewhere, or not to it")
	}
	if tl := specs["fdholder"].Tolerations; len(tl) != 1 || tl[0].Operator != corev1.TolerationOpExists || tl[0].Key != "" {
		t.Errorf("fdholder tolerations %v, want the default (every taint)", tl)
	}
	if p := specs["controller"].Containers[1]; p.Image != "registry.k8s.io/sig-storage/csi-provisioner:v5.3.0" || !slices.Contains(p.Args, "--v=5") {
		t.Errorf("provisioner sidecar: image %s args %v", p.Image, p.Args)
	}
}

// TestChartDefaultsTolerateEveryTaint: the node plugin and the descriptor
// holder run on every node, tainted ones included.
func TestChartDefaultsTolerateEveryTaint(t *testing.T) {
	for _, name := range []string{"basin-node", "basin-fdholder"} {
		tl := renderedDaemonSet(t, "", name).Spec.Template.Spec.Tolerations
		if !slices.ContainsFunc(tl, func(x corev1.Toleration) bool { return x.Key == "" && x.Operator == corev1.TolerationOpExists }) {
			t.Errorf("%s tolerations %v: none tolerates every taint", name, tl)
		}
	}
}

// TestChartStorageClasses: the listed StorageClasses are rendered for
// basin.csi.dev, and their parameters pass the driver's parser.
func TestChartStorageClasses(t *testing.T) {
	const values = `
storageClasses:
  - name: basin-data
    parameters: {bucket: training-data, cacheSize: 50Gi, metadataTTL: "60s"}
  - name: basin-scratch
    parameters: {bucket: scratch}
    reclaimPolicy: Retain
    volumeBindingMode: WaitForFirstConsumer
    annotations: {storageclass.kubernetes.io/is-default-class: "true"}
`
	docs := renderChart(t, values)
	for _, err := range checkAttributes(docs) {
		t.Error(err)
	}
	objs := rendered(t, values)
	data, ok1 := objs["StorageClass/basin-data"].(*storagev1.StorageClass)
	scratch, ok2 := objs["StorageClass/basin-scratch"].(*storagev1.StorageClass)
	if !ok1 || !ok2 {
		t.Fatalf("StorageClasses rendered: %v %v", ok1, ok2)
	}
	if data.Provisioner != driverName || data.Parameters["cacheSize"] != "50Gi" || *data.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
		*data.VolumeBindingMode != storagev1.VolumeBindingImmediate {
		t.Errorf("basin-data: %+v", data)
	}
	if *scratch.ReclaimPolicy != corev1.PersistentVolumeReclaimRetain || *scratch.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer ||
		scratch.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" {
		t.Errorf("basin-scratch: %+v", scratch)
	}
	bad := renderChart(t, "storageClasses: [{name: bad, parameters: {bucket: b, cacheSizee: 1Gi}}]\n")
	if errs := checkAttributes(bad); len(errs) == 0 {
		t.Error("an unknown volume attribute in a StorageClass passed the check")
	}
}

// TestChartMetrics: the metrics Services select the plugins' pods on
// their metrics port, and the ServiceMonitors select the Services.
func TestChartMetrics(t *testing.T) {
	if out, err := helmTemplate(t, ""); err != nil || bytes.Contains(out, []byte("ServiceMonitor")) || bytes.Contains(out, []byte("-metrics\n")) {
		t.Fatalf("metrics objects rendered by default (%v)", err)
	}
	out, err := helmTemplate(t, "metrics: {serviceMonitor: {enabled: true, interval: 15s, labels: {release: prom}}}\n")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]map[string]any{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
	for {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if m == nil {
			continue
		}
		meta, _ := m["metadata"].(map[string]any)
		kinds[m["kind"].(string)+"/"+meta["name"].(string)] = m
	}
	for _, c := range []string{"controller", "node"} {
		svc, ok := kinds["Service/basin-"+c+"-metrics"]
		if !ok {
			t.Errorf("no Service basin-%s-metrics", c)
			continue
		}
		sel := svc["spec"].(map[string]any)["selector"].(map[string]any)
		if sel["app.kubernetes.io/name"] != "basin-"+c {
			t.Errorf("Service basin-%s-metrics selects %v", c, sel)
		}
		sm, ok := kinds["ServiceMonitor/basin-"+c]
		if !ok {
			t.Errorf("no ServiceMonitor basin-%s", c)
			continue
		}
		smSel := sm["spec"].(map[string]any)["selector"].(map[string]any)["matchLabels"].(map[string]any)
		svcLabels := svc["metadata"].(map[string]any)["labels"].(map[string]any)
		for k, v := range smSel {
			if svcLabels[k] != v {
				t.Errorf("ServiceMonitor basin-%s selects %s=%v, the Service has %v", c, k, v, svcLabels[k])
			}
		}
		if sm["metadata"].(map[string]any)["labels"].(map[string]any)["release"] != "prom" {
			t.Errorf("ServiceMonitor basin-%s lacks the extra label", c)
		}
	}
}
