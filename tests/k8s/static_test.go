//go:build k8se2e

package k8s

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// staticVolume creates a PV for bucket/prefix (handle is its volume
// handle: a fresh one means a fresh cache) and a claim bound to it in ns,
// with the cluster MinIO's keys; attrs are extra volume attributes. The
// PV goes when the test ends.
func staticVolume(t *testing.T, ns, name, handle, bucket, prefix, mode string, attrs map[string]string) {
	t.Helper()
	credentialsSecret(t, name+"-creds")
	staticVolumeWithSecret(t, ns, name, handle, bucket, prefix, mode, attrs)
}

// staticVolumeWithSecret is staticVolume with the secret name+"-creds"
// made by the caller.
func staticVolumeWithSecret(t *testing.T, ns, name, handle, bucket, prefix, mode string, attrs map[string]string) {
	t.Helper()
	readOnly := mode == "ReadOnlyMany"
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: v1
kind: PersistentVolume
metadata:
  name: %[1]s
spec:
  capacity: {storage: 1Gi}
  accessModes: [%[2]s]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  claimRef: {namespace: %[3]s, name: %[1]s}
  csi:
    driver: basin.csi.dev
    volumeHandle: %[4]s
    readOnly: %[5]t
    nodeStageSecretRef: {name: %[1]s-creds, namespace: basin-system}
    nodePublishSecretRef: {name: %[1]s-creds, namespace: basin-system}
    volumeAttributes:
      backend: s3
      pathStyle: "true"
      bucket: %[6]s
      prefix: %[7]q
      readOnly: "%[5]t"
`, name, mode, ns, handle, readOnly, bucket, prefix)
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "      %s: %q\n", k, attrs[k])
	}
	fmt.Fprintf(&b, `---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  storageClassName: ""
  volumeName: %[1]s
  accessModes: [%[3]s]
  resources:
    requests:
      storage: 1Gi
`, name, ns, mode)
	apply(t, b.String())
	t.Cleanup(func() { _, _ = kubectlErr("delete", "pv", name, "--ignore-not-found", "--wait=false") })
	waitBound(t, ns, name)
}

// sumsListing is what `sha256sum DIR/*` prints for objects named
// prefix+NNNNN with the given sums, seen under dir.
func sumsListing(dir, prefix string, sums map[string]string) string {
	names := make([]string, 0, len(sums))
	for k := range sums {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, "%s  %s/%s\n", sums[k], dir, strings.TrimPrefix(k, prefix))
	}
	return b.String()
}

// digest is the SHA-256 of s in hex (what `| sha256sum` prints).
func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// fuseProcesses lists the pids of the `csi-driver mount` processes on
// this machine serving the volume with handle.
func fuseProcesses(t *testing.T, handle string) []int {
	t.Helper()
	var serving []int
	for _, pid := range volumeProcesses(t, handle) {
		if holdsCacheLock(pid) {
			serving = append(serving, pid)
		}
	}
	return serving
}

// holdsCacheLock reports whether process pid has a cache's LOCK file
// open: the process serving a volume does, its standby (which opens the
// cache only when it takes over) does not.
func holdsCacheLock(pid int) bool {
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && strings.HasSuffix(target, "/LOCK") {
			return true
		}
	}
	return false
}

// volumeProcesses lists every `csi-driver mount` process of the volume
// handle: the serving one and its standby.
func volumeProcesses(t *testing.T, handle string) []int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) < 2 || !strings.HasSuffix(args[0], "csi-driver") || args[1] != "mount" {
			continue
		}
		if i := slices.Index(args, "--volume-id"); i > 0 && i+1 < len(args) && args[i+1] == handle {
			var pid int
			if _, err := fmt.Sscanf(strings.Split(f, "/")[2], "%d", &pid); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}
