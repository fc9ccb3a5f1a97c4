// Package sut holds the benchmark's systems under test: things that put the
// benchmark bucket at a directory. Each System mounts the whole bucket (or,
// for the local ceiling, is a plain directory holding the same data set),
// reports the PID of its FUSE process for RSS sampling, and can drop its
// persistent cache so a phase starts cold.
//
// Implementations: Local (the ceiling), Rclone (rclone mount, VFS cache
// "full"), S3fs (use_cache), GCSFuse (file cache, against fake-gcs-server),
// Basin (csi-driver mount) and Direct, the direct client (bench/direct):
// no file system, a Client the runner sends the cold phases' workloads
// to. ProcessCPU reads the CPU time of a system's process tree.
//
// FUSE systems run their daemon in the foreground as a child process in
// its own process group, with its output in a log file under the work
// directory; Unmount sends SIGTERM, which every one of them answers by
// unmounting, and falls back to a lazy unmount and SIGKILL.
//
// Secrets never go into argv: peers read them from 0600 files written into
// the system's private directory (rclone.conf, s3fs passwd) or from the
// environment (Basin, Direct).
package sut
