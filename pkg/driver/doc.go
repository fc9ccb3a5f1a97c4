// Package driver is Basin's CSI plugin: the gRPC server, the Identity
// service, the Controller service (CreateVolume / DeleteVolume against the
// object store) and the Node service. gRPC and CSI types appear only here.
//
// Layout:
//   - server.go: Driver, the unix-socket gRPC server and the Service
//     interface each CSI service implements; log.go: the logging
//     interceptor (secrets stripped with csi-lib-utils' protosanitizer).
//   - identity.go: GetPluginInfo, GetPluginCapabilities, Probe.
//   - controller.go, provision.go, conn.go, capabilities.go: the
//     Controller service (conn.go: reaching a volume's bucket with the
//     request's credentials); volumeid.go: the volume ID format;
//     naming.go: the bucket and prefix names derived from volume names;
//     record.go: the volume record kept next to the data.
//   - config.go: Config (every process) and ControllerConfig.
//   - errors.go: the driver's sentinel errors and toStatus, the one
//     mapping from errors to gRPC codes.
//   - node*.go: the Node service; node_reconcile.go: taking back the
//     staged volumes after a restart, in the background while serving;
//     node_warmup.go: the warmup attribute's background reads, ended by
//     unstage and Close. node_request.go builds a volume's mount spec
//     (pkg/mountspec) from its attributes, access mode, mount flags (the
//     PV's spec.mountOptions) and volume mount group (the pod's fsGroup;
//     the node advertises VOLUME_MOUNT_GROUP): at stage and at the
//     start-up reconcile, from what the node state recorded. A volume has
//     one group per node; a request for another is FailedPrecondition.
//     node_share.go: read-only volumes of one source share a FUSE process
//     and cache (their staging paths are bind mounts of the share);
//     node_share_access.go: the proof, with a joining volume's own
//     credentials, that it can read its source.
//
// Volume IDs carry everything DeleteVolume and the node need to find a
// volume's data (backend, bucket, prefix, region, addressing style,
// provisioning and reclaim policy) but no secret, and a fingerprint of the
// endpoint instead of the endpoint itself: DeleteVolume receives only the
// volume ID and the provisioner secret, so the endpoint of a volume that
// is to be deleted lives in that secret (key "endpoint"), and the
// fingerprint makes sure the secret still points at the store the volume
// was created in. See docs/architecture.md, "CSI controller".
package driver
