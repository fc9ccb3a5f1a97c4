// Package mountspec is the typed, versioned description of one Basin mount:
// the contract between the CSI node plugin, which decides how a volume is
// mounted, and the `csi-driver mount` process that serves it.
//
// Contract:
//   - Spec holds every setting of a mount (where the data is, cache and
//     file system tuning, ownership, mount options) and nothing secret.
//     Default returns the defaults (written once, in
//     internal/mountdefaults, which pkg/cache and pkg/fuse use for their
//     zero values); volume attributes and the mount command's flags start
//     from it. Validate checks a Spec with the one set of limits, and the
//     mount process validates again what it receives.
//   - The node plugin builds a Spec from the volume attributes (package
//     volumeattr, Attributes.MountSpec), the volume capability's mount
//     flags (WithOptions) and its volume mount group (WithMountGroup); the
//     standalone mount command builds one from its flags.
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
// The package imports only objstore, internal/mountdefaults and
// internal/owned (the private-file checks of the hand-off file); the
// supervisor, the driver and the mount command all import it.
package mountspec
