// Package volumeattr is the one parser of Basin's volume attributes: the
// parameters of a StorageClass (CreateVolume), the volumeAttributes of a
// PersistentVolume (the VolumeContext of NodeStageVolume and
// NodePublishVolume) and the keys of the secrets that go with them.
//
// Parse turns the string maps into a typed Attributes value, filling in
// defaults and reporting every problem at once (errors.Join, each wrapping
// ErrInvalid). The mount settings are mountspec's (mountspec.ParseAttributes
// reads them into the mountspec.Spec that Attributes embed); this package
// adds what is not a mount setting: provisioning, reclaim, warmup, cache
// affinity, the shared cache tier's bounds (the controller's) and the
// secret. Encode is Parse's inverse: the canonical
// VolumeContext the controller returns, holding every setting explicitly so
// a volume keeps the configuration it was created with (and a volume staged
// by an older release compares equal to its record). Parse(Encode(a)) == a
// for every valid a; a property test and a fuzz target hold the two to
// that.
//
// Conventions: keys are lowerCamelCase (keys.go, mountspec's keys.go);
// sizes are Kubernetes quantities ("10Gi", "512Mi"); durations are Go
// durations ("90s", "2h") where "0" means "do not cache" and "-1" means
// "forever" (mountspec.Forever); file modes are octal. Keys Kubernetes adds on its own (csi.storage.k8s.io/*,
// storage.kubernetes.io/*) are ignored; any other unknown key is an error
// that names it and lists the accepted keys.
//
// Secrets are only ever read from the secret map and live in Secrets,
// whose String and GoString redact them. No error of this package quotes a
// value that came from a secret.
package volumeattr
