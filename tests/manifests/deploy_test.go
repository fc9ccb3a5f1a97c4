package manifests

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/yaml"

	"github.com/basin-csi/basin/internal/testserver"
)

// deployDir holds the kustomization that installs the driver.
const deployDir = "deploy/kubernetes"

// kustomization is the part of kustomize's configuration the deployment
// uses; decoding it strictly catches a misspelt or unexpected field.
type kustomization struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Namespace  string            `json:"namespace"`
	Labels     []kustomizeLabels `json:"labels"`
	Resources  []string          `json:"resources"`
	Images     []kustomizeImage  `json:"images"`
}

// kustomizeLabels is an entry of a kustomization's labels.
type kustomizeLabels struct {
	Pairs            map[string]string `json:"pairs"`
	IncludeSelectors bool              `json:"includeSelectors"`
	IncludeTemplates bool              `json:"includeTemplates"`
}

// kustomizeImage is an entry of a kustomization's images.
type kustomizeImage struct {
	Name    string `json:"name"`
	NewName string `json:"newName"`
	NewTag  string `json:"newTag"`
	Digest  string `json:"digest"`
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, deployDir, kustomizationFile))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		t.Fatalf("%s: %v", kustomizationFile, err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("apiVersion/kind = %s/%s, want kustomize.config.k8s.io/v1beta1/Kustomization", k.APIVersion, k.Kind)
	}
	files, err := yamlFiles(deployDir)
	if err != nil {
		t.Fatal(err)
	}
	var present []string
	for _, f := range files {
		rel, err := filepath.Rel(deployDir, f)
		if err != nil {
			t.Fatal(err)
		}
		present = append(present, filepath.ToSlash(rel))
	}
	listed := slices.Clone(k.Resources)
	slices.Sort(listed)
	slices.Sort(present)
	if len(slices.Compact(slices.Clone(listed))) != len(listed) {
		t.Errorf("resources list a file twice: %v", k.Resources)
	}
	if !slices.Equal(listed, present) {
		t.Errorf("kustomization resources = %v, files present = %v", listed, present)
	}
	if !slices.ContainsFunc(k.Images, func(i kustomizeImage) bool { return i.Name == basinImage }) {
		t.Errorf("images: no entry for %s to override", basinImage)
	}

	docs := under(loadManifests(t), filepath.FromSlash(deployDir))
	for _, d := range docs {
		if ns, ok := d.obj.(*corev1.Namespace); ok && ns.Name != k.Namespace {
			t.Errorf("%s: namespace %s, kustomization sets %s", d, ns.Name, k.Namespace)
		}
	}
}

// kustomizeBuild renders the kustomization with kubectl (kustomize is
// built in) and decodes the result strictly.
func kustomizeBuild(t *testing.T) []document {
	t.Helper()
	kubectl := testserver.RequireBinary(t, "kubectl", "the Kubernetes client, which renders the kustomization")
	out, err := exec.Command(kubectl, "kustomize", filepath.Join(repoRoot, deployDir)).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v", err)
	}
	dec, err := strictDecoder()
	if err != nil {
		t.Fatal(err)
	}
	docs, err := decodeDocuments(dec, "kustomize output", out)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// TestKustomizeBuild renders the kustomization and checks the kinds.
func TestKustomizeBuild(t *testing.T) {
	kinds := map[string]int{}
	for _, d := range kustomizeBuild(t) {
		kinds[fmt.Sprintf("%T", d.obj)]++
	}
	for want, n := range map[string]int{"*v1.CSIDriver": 1, "*v1.Deployment": 1, "*v1.DaemonSet": 2, "*v1.ClusterRole": 3, "*v1.CustomResourceDefinition": 2,
		// node-cachestatus-policy.yaml
		"*v1.ValidatingAdmissionPolicy": 1, "*v1.ValidatingAdmissionPolicyBinding": 1,
		// placement-webhook.yaml
		"*v1.Service": 1, "*v1.MutatingWebhookConfiguration": 1} {
		if kinds[want] != n {
			t.Errorf("rendered %d objects of type %s, want %d (all: %v)", kinds[want], want, n, kinds)
		}
	}
}

func TestCSIDriver(t *testing.T) {
	var found []*storagev1.CSIDriver
	for _, d := range under(loadManifests(t), filepath.FromSlash(deployDir)) {
		if c, ok := d.obj.(*storagev1.CSIDriver); ok {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		t.Fatalf("found %d CSIDriver objects, want 1", len(found))
	}
	c := found[0]
	if c.Name != driverName {
		t.Errorf("name = %s, want %s", c.Name, driverName)
	}
	if c.Spec.AttachRequired == nil || *c.Spec.AttachRequired {
		t.Error("attachRequired must be false")
	}
	if c.Spec.PodInfoOnMount == nil || !*c.Spec.PodInfoOnMount {
		t.Error("podInfoOnMount must be true")
	}
	if c.Spec.FSGroupPolicy == nil || *c.Spec.FSGroupPolicy != storagev1.FileFSGroupPolicy {
		t.Error("fsGroupPolicy must be File")
	}
	if !slices.Equal(c.Spec.VolumeLifecycleModes, []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}) {
		t.Errorf("volumeLifecycleModes = %v, want [Persistent]", c.Spec.VolumeLifecycleModes)
	}
}

// daemonSet returns the DaemonSet of that name in deployDir.
func daemonSet(t *testing.T, name string) *appsv1.DaemonSet {
	t.Helper()
	for _, d := range under(loadManifests(t), filepath.FromSlash(deployDir)) {
		if o, ok := d.obj.(*appsv1.DaemonSet); ok && o.Name == name {
			return o
		}
	}
	t.Fatalf("no DaemonSet %s in %s", name, deployDir)
	return nil
}

// hostPathOf maps a path inside container c of spec to the host path it
// shows, through c's hostPath volume mounts ("" if none covers it).
func hostPathOf(spec corev1.PodSpec, c corev1.Container, p string) string {
	vols := map[string]string{}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			vols[v.Name] = v.HostPath.Path
		}
	}
	best, host := "", ""
	for _, m := range c.VolumeMounts {
		rest, ok := strings.CutPrefix(p, m.MountPath)
		if ok && vols[m.Name] != "" && (rest == "" || rest[0] == '/') && len(m.MountPath) > len(best) {
			best, host = m.MountPath, path.Join(vols[m.Name], rest)
		}
	}
	return host
}

// flagValue returns the value of --name=value in args.
func flagValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// TestFDHolder checks that the node plugin and the descriptor holder meet
// at the same socket on the host, and that applying a new release never
// restarts the holder (with the node plugin, it would lose the
// connections).
func TestFDHolder(t *testing.T) {
	holder, node := daemonSet(t, "basin-fdholder"), daemonSet(t, "basin-node")
	if holder.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
		t.Errorf("basin-fdholder updateStrategy %q, want OnDelete", holder.Spec.UpdateStrategy.Type)
	}
	hc := holder.Spec.Template.Spec.Containers
	if len(hc) != 1 || len(hc[0].Args) == 0 || hc[0].Args[0] != "fdholder" {
		t.Fatalf("basin-fdholder does not run `csi-driver fdholder`: %+v", hc)
	}
	hostHolder := hostPathOf(holder.Spec.Template.Spec, hc[0], flagValue(hc[0].Args, "socket"))
	var plugin corev1.Container
	for _, c := range node.Spec.Template.Spec.Containers {
		if c.Name == "csi-driver" {
			plugin = c
		}
	}
	hostNode := hostPathOf(node.Spec.Template.Spec, plugin, flagValue(plugin.Args, "fdholder-socket"))
	if hostHolder == "" || hostHolder != hostNode {
		t.Errorf("holder socket on the host %q, node plugin's %q: they must meet", hostHolder, hostNode)
	}
}

// TestNodePlugin checks what the node plugin cannot work without.
func TestNodePlugin(t *testing.T) {
	for _, err := range checkNodePlugin(daemonSet(t, "basin-node"), defaultKubeletDir) {
		t.Error(err)
	}
}

// defaultKubeletDir is kubelet's root directory in deploy/kubernetes.
const defaultKubeletDir = "/var/lib/kubelet"

// checkNodePlugin checks the node plugin's DaemonSet for a kubelet whose
// root directory is kubeletDir.
func checkNodePlugin(ds *appsv1.DaemonSet, kubeletDir string) []error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	spec := ds.Spec.Template.Spec
	if spec.HostNetwork {
		fail("hostNetwork must be false")
	}
	hostPaths := map[string]string{}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	byName := map[string]corev1.Container{}
	for _, c := range spec.Containers {
		byName[c.Name] = c
	}
	plugin, ok := byName["csi-driver"]
	if !ok || len(plugin.Args) == 0 || plugin.Args[0] != "node" {
		return append(errs, fmt.Errorf("no csi-driver container running `node` (args %v)", plugin.Args))
	}
	if plugin.SecurityContext == nil || plugin.SecurityContext.Privileged == nil || !*plugin.SecurityContext.Privileged {
		fail("csi-driver node must be privileged")
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range plugin.VolumeMounts {
		mounts[hostPaths[m.Name]] = m
	}
	// kubelet names staging and target paths as they are on the host: the
	// plugin must see its root directory at the same path.
	if m, ok := mounts[kubeletDir]; !ok || m.MountPath != kubeletDir || m.MountPropagation == nil || *m.MountPropagation != corev1.MountPropagationBidirectional {
		fail("csi-driver node must mount hostPath %s at the same path with Bidirectional propagation", kubeletDir)
	}
	if _, ok := mounts["/dev/fuse"]; !ok {
		fail("csi-driver node must mount hostPath /dev/fuse")
	}
	if _, ok := mounts["/var/lib/basin"]; !ok {
		fail("csi-driver node must mount hostPath /var/lib/basin (cache root and state file)")
	}
	for _, want := range []string{"--cache-root=/var/lib/basin/cache", "--state-file=/var/lib/basin/node-state.json", "--node-id=$(NODE_NAME)"} {
		if !slices.Contains(plugin.Args, want) {
			fail("csi-driver node args %v lack %s", plugin.Args, want)
		}
	}

	// The plugin registers itself with kubelet: it must announce the
	// socket where its socket directory really is on the host, from
	// kubelet's plugin registry directory.
	regPath, regDir := flagValue(plugin.Args, "kubelet-registration-path"), flagValue(plugin.Args, "registration-dir")
	var socketDir, registryDir string
	for _, m := range plugin.VolumeMounts {
		switch m.MountPath {
		case "/csi":
			socketDir = hostPaths[m.Name]
		case regDir:
			registryDir = hostPaths[m.Name]
		}
	}
	if wantSocketDir := path.Join(kubeletDir, "plugins", driverName); regPath == "" || path.Dir(regPath) != socketDir || socketDir != wantSocketDir {
		fail("registration path %q does not match the socket directory %q (%s)", regPath, socketDir, wantSocketDir)
	}
	if wantRegistry := path.Join(kubeletDir, "plugins_registry"); regDir == "" || registryDir != wantRegistry {
		fail("--registration-dir %q is not hostPath %s (got %q)", regDir, wantRegistry, registryDir)
	}
	if !slices.Contains(plugin.Args, "--health-address=:9808") || plugin.LivenessProbe == nil {
		fail("csi-driver node must serve /healthz on :9808 with a liveness probe on it")
	}
	if len(spec.Containers) != 1 {
		fail("node plugin has %d containers; its sidecars' jobs are in-process", len(spec.Containers))
	}
	return errs
}
