// Package nodestate is the CSI node plugin's memory across restarts: the
// volumes staged on this node, their volume context (never a secret),
// access mode, mount flags and volume mount group (what the node plugin
// builds a volume's mount spec from, so that a restarted one builds the
// same), and the targets each is published to. Records written by a
// release before mount flags and groups have neither, and say so
// (Volume.MountRecorded is false). It is one JSON file, rewritten
// atomically on every change (temp file, fsync, rename, directory fsync),
// so a crash leaves either the old or the new state, never a torn one.
//
// Credentials are not in the state file. A restarted node plugin needs
// them to start a volume's FUSE process again, so they are kept apart, one
// 0600 file per volume in a 0700 directory next to the state file,
// removed at unstage (credentials.go).
package nodestate
