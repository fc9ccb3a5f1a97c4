// Package mountspec is the typed, versioned description of one Basin mount:
// the contract between the CSI node plugin, which decides how a volume is
// mounted, and the `csi-driver mount` process that serves it.
//
// Contract:
//   - Spec is the one typed form of a mount setting: where the data is,
//     cache and file system tuning, ownership, mount options; nothing
//     secret. Default returns the defaults (written once, in
//     internal/mountdefaults, which pkg/cache and pkg/fuse use for their
//     zero values); volume attributes and the mount command's flags start
//     from it.
//   - Each setting's text form and limits are stated once, in the table
//     of settings.go (keys in keys.go, text helpers in text.go):
//     ParseAttributes reads a volume's attributes (the mount keys; the
//     others are returned to package volumeattr), Spec.Attributes writes
//     them back canonically, AddFlags declares `csi-driver mount`'s flags,
//     and Validate checks a Spec from any source with the same limits
//     (the mount process validates again what it receives). A new setting
//     is a Spec field, its default and a line of the table; pkg/cache's
//     Options and pkg/fuse's Config embed the Spec and read it there.
//   - The node plugin builds a Spec from the volume attributes (package
//     volumeattr, whose Attributes embed the Spec), the volume
//     capability's mount flags (WithOptions) and its volume mount group
//     (WithMountGroup); the standalone mount command builds one from its
//     flags.
//   - A Spec crosses to the mount process in a hand-off file (handoff.go):
//     0600, in a 0700 directory, read once and deleted, holding the Spec
//     and the store's credentials, never on the command line. The file
//     names Version; a reader refuses any other version with ErrVersion.
//   - Mount options (options.go) are a closed list; anything else is an
//     error naming the option and the accepted ones.
//   - Exit codes (exit.go) tell the node plugin why a mount process gave
//     up before serving: a missing bucket, refused credentials, an
//     unreachable store, an invalid spec, or a spec of another version
//     (ExitVersion: a release skew, not an invalid request). ExitCode and
//     ExitError are the one mapping between them and the sentinels.
//
// The package imports only objstore, internal/mountdefaults,
// internal/owned (the private-file checks of the hand-off file) and
// apimachinery's resource.Quantity (sizes); the supervisor, the driver and
// the mount command all import it.
package mountspec
