//go:build k8se2e

// Package k8s is Basin's cluster test: scenarios run by real pods on the
// multi-node Kubernetes cluster of hack/k8s/cluster.sh (a control plane and
// kubelets node1..nodeN, each with its own containerd, network and mount
// namespace, and kube-proxy; csi-provisioner), each asserting on what the
// pods saw (exit codes, checksums) and on the bucket. A scenario about one
// node pins its pods to env.Nodes[0].
//
// It builds only with the k8se2e tag and needs the environment that
// `hack/k8s/cluster.sh up` writes to $BASIN_K8S_DIR/env, and it runs in the
// control plane's network namespace (`hack/k8s/cluster.sh exec`), where the
// API server, the object stores and the pods' addresses are reached;
// `make k8s-e2e` does all of it. Without a cluster every scenario fails (it
// never skips).
package k8s
