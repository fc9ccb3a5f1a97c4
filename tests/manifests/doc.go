// Package manifests tests Basin's Kubernetes manifests and their
// documentation; it has no code of its own.
//
// Every YAML document under deploy/ and examples/ is decoded strictly into
// its k8s.io/api type (unknown fields, duplicate fields and unknown kinds
// fail), every StorageClass parameter map and PersistentVolume
// volumeAttributes map of basin.csi.dev goes through volumeattr.Parse with
// the secrets it references, pods that mount a PVC must use
// mountPropagation: HostToContainer, the kustomization must list exactly
// the files next to it, and docs/kubernetes.md must document every
// attribute and secret key with the parser's defaults.
//
// The Helm chart (deploy/helm/basin) is rendered with the pinned helm
// (hack/install-tools.sh): it lints clean in strict mode, with its default
// values it renders the kustomization's objects field for field, its
// schema refuses mistyped values naming them, and its values (kubeletDir,
// per-component placement, the toggles, StorageClasses, metrics) reach the
// objects they belong to. The Grafana dashboard (deploy/grafana) queries
// only metrics the binaries register.
package manifests
