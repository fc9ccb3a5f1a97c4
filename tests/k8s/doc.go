//go:build k8se2e

// Package k8s is Basin's cluster test: scenarios run by real pods on the
// single-node Kubernetes cluster of hack/k8s/cluster.sh (a real kubelet,
// API server and csi-provisioner), each asserting on what the pods saw
// (exit codes, checksums) and on the bucket.
//
// It builds only with the k8se2e tag and needs the environment that
// `hack/k8s/cluster.sh up` writes to $BASIN_K8S_DIR/env; `make k8s-e2e`
// does all of it. Without a cluster every scenario fails (it never skips).
package k8s
