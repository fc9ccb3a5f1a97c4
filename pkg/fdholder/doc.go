// Package fdholder keeps duplicates of the node's /dev/fuse descriptors in
// a process of their own, so that a FUSE connection outlives the node
// plugin that mounted it.
//
// A kernel FUSE connection lives while any descriptor of it is open. The
// node plugin holds one and its FUSE processes another; both live in the
// node plugin's container and die with it on a restart or an upgrade. The
// holder (`csi-driver fdholder`, a DaemonSet of its own that is rarely
// updated) receives a duplicate of every connection's descriptor over a
// unix socket (SCM_RIGHTS) together with its volume ID, the session ID
// the FUSE process resumes with, and the mount's device number. A
// restarted node plugin gets the descriptors back and starts FUSE
// processes that take the connections over (`csi-driver mount --resume`)
// instead of mounting again: open files and published bind mounts stay
// valid. A restarted holder starts empty; the node plugin notices (its
// watch connection ends) and hands it every descriptor again.
//
// Layout:
//   - protocol.go: the messages, one request and one reply per
//     SOCK_SEQPACKET packet, a descriptor riding with a packet.
//   - server.go: Server, the holder's table and its socket.
//   - client.go: Client, what the node plugin calls.
//   - statfs.go: statfs of a mount on the node plugin's behalf, so that
//     the plugin never waits in the kernel for a FUSE server that died
//     with its request (the reason is there).
//
// The socket gives control over the node's FUSE connections: it lives in
// a 0700 directory and the server serves only peers of its own user or
// root (SO_PEERCRED).
package fdholder
