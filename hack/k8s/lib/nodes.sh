# The network and the nodes of the test cluster (sourced by cluster.sh).
#
# A bridge on the host without an address; the control plane and every
# node in a network namespace of its own, with a veth on the bridge and an
# address in $NET.0/24; node i's pods in 10.244.i.0/24, routed by the other
# namespaces through the node's address, and the Service range on eth0
# (kube-proxy rewrites it). Nothing routes off the bridge: no namespace has
# a default route, no address is masqueraded.
#
# A node is an anchor process (sleep) in the node's network namespace and
# in a mount namespace of its own (a slave of the host's), where per-node
# directories are bound over kubelet's root $KUBELET_DIR (made rshared, for
# Bidirectional propagation), /var/lib/basin (Basin's caches, node state
# and descriptor holder socket), /var/lib/cni, /var/log/pods,
# /var/log/containers and /run/containerd (where containerd's shims put
# their sockets, whatever its configuration says), and a tmpfs over
# /run/netns (the pods' network namespaces). Its containerd, kubelet and kube-proxy enter the anchor's
# namespaces; kubelet's pods live under the cgroup /NAME in every
# hierarchy.

# The kernel settings kubelet sets for the whole machine
# (protectKernelDefaults false); `down` puts back what they were.
KUBELET_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes)

# kubelet's root directory on every node (--root-dir): /var/lib/kubelet
# unless BASIN_K8S_KUBELET_DIR says otherwise (make k8s-e2e moves it, so
# that the chart's kubeletDir is tried end to end).
KUBELET_DIR=${BASIN_K8S_KUBELET_DIR:-/var/lib/kubelet}

# The host paths every node binds a directory of its own over.
NODE_PATHS=("$KUBELET_DIR" /var/lib/basin /var/lib/cni /var/log/pods /var/log/containers /run/containerd)

node_names() { local i; for ((i = 1; i <= NODES; i++)); do echo "node$i"; done; }
node_index() { echo "${1#node}"; }
node_ip() { echo "$NET.$((10 + $(node_index "$1")))"; }
node_pod_cidr() { echo "10.244.$(node_index "$1").0/24"; }
node_ns() { echo "basin-k8s-$1"; }
node_dir() { echo "$RUN/nodes/$1"; }
node_state() { echo "$STATE/$1"; }
node_sock() { echo "$STATE/$1/containerd.sock"; }
anchor_pid() { cat "$RUN/pids/$1-anchor"; }

# enter_ns NS / enter_node NODE print the command prefix that runs a
# command in network namespace NS / in the node's network and mount
# namespaces (nsenter execs the command: its pid is the command's).
enter_ns() { echo "nsenter --net=/run/netns/$1 --"; }
enter_node() { echo "nsenter -t $(anchor_pid "$1") -n -m --"; }
# in_ns NS CMD..., in_node NODE CMD...: run CMD there.
in_ns() { local ns=$1; shift; $(enter_ns "$ns") "$@"; }
in_node() { local n=$1; shift; $(enter_node "$n") "$@"; }

# netns_up NS IP VETH: a network namespace with eth0 (IP) on the bridge.
netns_up() {
  local ns=$1 ip=$2 veth=$3
  ip netns add "$ns"
  ip link add "$veth" type veth peer name eth0 netns "$ns"
  ip link set "$veth" master "$BRIDGE" up
  in_ns "$ns" ip link set lo up
  in_ns "$ns" ip addr add "$ip/24" dev eth0
  in_ns "$ns" ip link set eth0 up
  # Service addresses: without a route the kernel refuses a connection
  # (ENETUNREACH) before kube-proxy's rules rewrite its destination to a
  # pod's. An address no rule rewrites is asked for on the bridge, where
  # nothing answers.
  in_ns "$ns" ip route add "$SERVICE_CIDR" dev eth0
  # A new namespace starts with forwarding off; kube-proxy's rules for
  # bridged pod traffic need the bridge's packets in iptables.
  in_ns "$ns" sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1
}

network_up() {
  local n m
  ip link add "$BRIDGE" type bridge
  ip link set "$BRIDGE" up
  netns_up "$CP_NS" "$CP_IP" "$BRIDGE-cp"
  for n in $(node_names); do netns_up "$(node_ns "$n")" "$(node_ip "$n")" "$BRIDGE-$n"; done
  for n in $(node_names); do
    in_ns "$CP_NS" ip route add "$(node_pod_cidr "$n")" via "$(node_ip "$n")"
    for m in $(node_names); do
      [ "$m" = "$n" ] || in_ns "$(node_ns "$n")" ip route add "$(node_pod_cidr "$m")" via "$(node_ip "$m")"
    done
  done
}

# save_sysctls records KUBELET_SYSCTLS in $RUN/sysctls for `down`.
save_sysctls() {
  local k
  for k in "${KUBELET_SYSCTLS[@]}"; do echo "$k=$(sysctl -n "$k")"; done >"$RUN/sysctls"
}

# host_mountpoints creates the paths of NODE_PATHS that the host lacks
# (each node binds over them), listing them in $RUN/made-dirs for `down`.
host_mountpoints() {
  local p
  for p in "${NODE_PATHS[@]}"; do
    [ -d "$p" ] && continue
    mkdir -p "$p"
    echo "$p" >>"$RUN/made-dirs"
  done
}

# anchor_up NODE: the node's mount namespace, held by a sleeping process.
anchor_up() {
  local n=$1 d p
  d=$(node_dir "$n")
  mkdir -p "$d/root" "$(node_state "$n")"
  for p in "${NODE_PATHS[@]}"; do mkdir -p "$d/root$p"; done
  # shellcheck disable=SC2016
  start "$n-anchor" nsenter --net="/run/netns/$(node_ns "$n")" -- unshare --mount --propagation slave -- /bin/sh -c '
    set -e
    root=$1 kubelet_dir=$2; shift 2
    for p in "$@"; do mount --bind "$root$p" "$p"; done
    mount --make-rshared "$kubelet_dir"
    mount -t tmpfs -o mode=0755,size=16m basin-k8s-netns /run/netns
    mount --make-shared /run/netns
    touch "$root/anchored"
    exec sleep infinity' anchor "$d/root" "$KUBELET_DIR" "${NODE_PATHS[@]}"
  wait_for "$n's mount namespace" 10 test -e "$d/root/anchored"
}

# cgroups_up NODE: the node's cgroup root in every hierarchy (cpuset's
# cpus and mems copied from the top, which a new cpuset lacks).
cgroups_up() {
  local n=$1 h
  for h in /sys/fs/cgroup/*/; do
    mkdir -p "$h$n"
    if [ -f "$h/cpuset.cpus" ]; then
      cat "$h/cpuset.cpus" >"$h$n/cpuset.cpus"
      cat "$h/cpuset.mems" >"$h$n/cpuset.mems"
    fi
  done
}

containerd_up() {
  local n=$1 d s
  d=$(node_dir "$n") s=$(node_state "$n")
  mkdir -p "$d/containerd" "$d/cni/net.d" "$d/cni/ipam"
  cat >"$d/containerd/config.toml" <<TOML
version = 2
root = "$d/containerd/root"
state = "$s/containerd"
[grpc]
  address = "$(node_sock "$n")"
[plugins."io.containerd.internal.v1.opt"]
  path = "$d/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "basin.local/pause:v1"
  restrict_oom_score_adj = true
  enable_unprivileged_ports = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$s/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$d/cni/net.d"
TOML
  # The node's bridge cni0 is its pods' gateway; nothing is masqueraded.
  cat >"$d/cni/net.d/10-basin-e2e.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "basin-e2e",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$(node_pod_cidr "$n")"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$d/cni/ipam"
      }
    }
  ]
}
JSON
  start "$n-containerd" $(enter_node "$n") containerd --config "$d/containerd/config.toml"
}

# images_import NODE: every image of the run into the node's containerd.
images_import() {
  local n=$1 t
  wait_for "$n's containerd" 30 ctr --address "$(node_sock "$n")" version
  for t in "$RUN"/images/*.tar "$BASIN_IMAGE_TAR"; do
    ctr --address "$(node_sock "$n")" -n k8s.io images import "$t" >/dev/null
  done
}

kubelet_up() {
  local n=$1 d p=$RUN/pki
  d=$(node_dir "$n")
  mkdir -p "$d/volume-plugins"
  cat >"$d/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 0.0.0.0
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$p/ca.crt"}
authorization: {mode: Webhook}
tlsCertFile: "$p/kubelet-$n.crt"
tlsPrivateKeyFile: "$p/kubelet-$n.key"
cgroupDriver: cgroupfs
cgroupRoot: /$n
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$(node_sock "$n")
volumePluginDir: "$d/volume-plugins"
resolvConf: "$RUN/resolv.conf"
# Republish (requiresRepublish: credential rotation) and pod status come
# with the pod sync period.
syncFrequency: 10s
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}
imageGCHighThresholdPercent: 100
serializeImagePulls: false
maxPods: 50
YAML
  kubelet_start "$n"
}

# kubelet_start NODE: the node's kubelet (configured by kubelet_up).
kubelet_start() {
  local n=$1
  start "$n-kubelet" $(enter_node "$n") "$KB/kubelet" --config="$(node_dir "$n")/kubelet.yaml" \
    --kubeconfig="$RUN/kubelet-$n.kubeconfig" --hostname-override="$n" --node-ip="$(node_ip "$n")" \
    --root-dir="$KUBELET_DIR" --v=2
}

# kube_proxy_up NAME IP ENTER...: kube-proxy in the namespace ENTER (a
# prefix of enter_ns or enter_node) enters; NAME is its node's name. The
# conntrack sizes stay as they are (maxPerCore 0): nf_conntrack_max cannot
# be written outside the host's namespace.
kube_proxy_up() {
  local name=$1 ip=$2; shift 2
  cat >"$RUN/kube-proxy-$name.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "$RUN/kube-proxy.kubeconfig"}
hostnameOverride: $name
bindAddress: $ip
clusterCIDR: 10.244.0.0/16
mode: iptables
conntrack: {maxPerCore: 0, min: 0}
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
YAML
  kube_proxy_start "$name" "$@"
}

# kube_proxy_start NAME ENTER...: kube-proxy of NAME (configured by
# kube_proxy_up) in the namespace ENTER enters.
kube_proxy_start() {
  local name=$1; shift
  start "$name-kube-proxy" "$@" "$KB/kube-proxy" --config="$RUN/kube-proxy-$name.yaml" --v=1
}

# node_up NODE: the node's mount namespace, cgroups, containerd and its
# images, kubelet and kube-proxy (kubelet not yet Ready).
node_up() {
  local n=$1
  anchor_up "$n"
  cgroups_up "$n"
  containerd_up "$n"
  images_import "$n"
  kubelet_up "$n"
  kube_proxy_up "$n" "$(node_ip "$n")" $(enter_node "$n")
}
