// Package supervisor runs the per-volume FUSE processes of the CSI node
// plugin and keeps their mounts alive. It never imports pkg/cache or
// pkg/fuse: a FUSE process is `csi-driver mount --fd 3 --spec-file F ...`,
// started through a ProcessRunner (fakeable), handed a /dev/fuse
// descriptor on which the Manager itself called mount(2) with the spec's
// mount flags (Kernel, fakeable) and, in a 0600 hand-off file, the
// volume's mount spec and credentials (pkg/mountspec). Every process
// started for a volume (stage, heal, takeover) gets the same spec: a
// Request is constant while the volume is staged. A process that gives up
// before serving fails Stage with ErrExited, wrapping the objstore
// sentinel its exit code stands for and quoting its last output lines.
//
// Layout:
//   - runner.go: ProcessRunner, Process and the os/exec runner.
//   - kernel.go: Kernel, the mount side (FUSE mount with a held fd, bind,
//     unmount, health check, statfs), and its Linux implementation;
//     within.go: the timeout wrapper every call touching a FUSE mount
//     goes through; statfs.go: statfs and checks of FUSE mounts, run by
//     the descriptor holder when there is one (Prober).
//   - manager.go: Manager (Stage, Unstage, Check) and Request, Status;
//     volume.go: one supervised volume and its start sequence;
//     watchdog.go: noticing death (child exit at once, a hung or broken
//     mount by a periodic stat under a timeout) and healing it.
//   - rotate.go: new credentials for a running child (rotation file,
//     SIGHUP, ack file), without a remount; the credentials' format is
//     mountspec's (CredentialsJSON), the file checks internal/owned's.
//   - errors.go: the sentinel errors.
//   - logs.go: the child's stderr prefixed with the volume ID into klog
//     and a ring buffer of its last lines for error messages.
//   - reap.go: finding FUSE processes left by an earlier node plugin.
//   - holder.go: handing every connection's descriptor to the descriptor
//     holder (pkg/fdholder) and taking held connections over when a
//     restarted node plugin stages its volumes again.
//   - standby.go: a second child per volume (Config.Standby), started and
//     waiting with its store open, that takes the connection over on a
//     go-ahead instead of a child started after the death.
//
// Healing. The Manager holds the /dev/fuse fd of every mount. When the
// child exits or the mount stops answering, it first takes the connection
// over: a new child on the same fd with --resume (the session ID ties it
// to the connection; the volume's standby when it has one), which resumes the initialised session and has the
// kernel resend what was in flight, so no pod sees an error. When that is
// impossible (a broken connection, no session record) or fails, it closes
// the fd (aborting the dead connection), lazily unmounts the staging path,
// mounts it again with a new fd, starts a new child and re-binds every
// published target (Config.Binds); pods see that new mount only with
// mountPropagation: HostToContainer. With a Holder, a node plugin restart
// is a takeover too: Stage resumes the connection the holder kept instead
// of mounting again. See docs/architecture.md.
package supervisor
