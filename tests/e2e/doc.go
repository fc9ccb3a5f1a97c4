// Package e2e drives Basin's CSI services the way kubelet and the
// csi-provisioner sidecar do (CreateVolume, NodeStageVolume,
// NodePublishVolume, ..., DeleteVolume) over a real unix-socket gRPC
// connection, with real FUSE mounts and real object-store servers (MinIO,
// fake-gcs-server). The tests need root and /dev/fuse; under CI=true a
// missing prerequisite fails instead of skipping.
package e2e
