#!/usr/bin/env bash
# A single-node Kubernetes cluster on this machine, for Basin's cluster
# tests and for trying Basin by hand:
#
#   hack/k8s/cluster.sh up     start containerd, etcd, the control plane, a
#                              kubelet and MinIO; import the images; apply
#                              deploy/kubernetes through the test overlay
#   hack/k8s/cluster.sh down   stop everything and remove what `up` left:
#                              processes, mounts, network namespaces,
#                              iptables chains, cgroups, files
#
# Everything listens on 127.0.0.1; pods get addresses in network namespaces
# of their own on a bridge that routes nothing off the machine (no gateway,
# no masquerading, no kube-proxy, no DNS). Pods that must reach MinIO (the
# Basin plugins) use the host's network, as the overlay says.
#
# Needs root, the binaries of hack/k8s/build-tools.sh, `make image`, and
# apt's containerd, runc, containernetworking-plugins, iptables, conntrack,
# busybox-static and openssl (hack/k8s/apt.sh installs them).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
RUN=${BASIN_K8S_DIR:-/var/lib/basin-k8s}
STATE=/run/basin-k8s
SOCK=$STATE/containerd.sock
NODE=localhost
KUBELET_DIR=/var/lib/kubelet
BASIN_DIR=/var/lib/basin
MINIO_PORT=${BASIN_K8S_MINIO_PORT:-19000}
GCS_PORT=${BASIN_K8S_GCS_PORT:-19001}
TOOLS=${BASIN_TOOLS_DIR:-$HOME/.cache/basin-tools}
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/24

log() { printf '[cluster %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

k8s_bin() { "$here/build-tools.sh" | tail -1; }

# ---------------------------------------------------------------- up

pki() {
  local d=$RUN/pki
  mkdir -p "$d" && chmod 700 "$d"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3 -subj "/CN=basin-e2e-ca" \
    -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
  openssl genrsa -out "$d/sa.key" 2048 2>/dev/null
  openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
  # name CN O SANs(comma list or "")
  cert() {
    local name=$1 cn=$2 o=$3 san=$4 ext=$d/$1.ext
    if [ -n "$san" ]; then
      printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$san" >"$ext"
    else
      printf 'extendedKeyUsage=clientAuth\n' >"$ext"
    fi
    local subj="/CN=$cn"
    [ -n "$o" ] && subj="/O=$o$subj"
    openssl req -new -newkey rsa:2048 -nodes -subj "$subj" -keyout "$d/$name.key" -out "$d/$name.csr" 2>/dev/null
    openssl x509 -req -in "$d/$name.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
      -days 3 -extfile "$ext" -out "$d/$name.crt" 2>/dev/null
  }
  cert apiserver kube-apiserver "" "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:127.0.0.1,IP:10.96.0.1"
  cert admin kubernetes-admin system:masters ""
  cert apiserver-kubelet kube-apiserver-kubelet-client system:masters ""
  cert controller-manager system:kube-controller-manager "" ""
  cert scheduler system:kube-scheduler "" ""
  cert kubelet "system:node:$NODE" system:nodes "DNS:$NODE,IP:127.0.0.1"
  for who in admin controller-manager scheduler kubelet; do
    cat >"$RUN/$who.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: basin-e2e
  cluster: {server: "https://127.0.0.1:6443", certificate-authority: "$d/ca.crt"}
users:
- name: $who
  user: {client-certificate: "$d/$who.crt", client-key: "$d/$who.key"}
contexts:
- name: basin-e2e
  context: {cluster: basin-e2e, user: $who, namespace: default}
current-context: basin-e2e
EOF
  done
}

# start NAME CMD...: runs CMD in the background, logging to logs/NAME.log,
# its pid in pids/NAME.
start() {
  local name=$1; shift
  "$@" >"$RUN/logs/$name.log" 2>&1 &
  echo $! >"$RUN/pids/$name"
}

# wait_for WHAT SECONDS CMD...: retries CMD until it succeeds.
wait_for() {
  local what=$1 secs=$2; shift 2
  local end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || die "$what not ready after ${secs}s (logs: $RUN/logs)"
    sleep 0.5
  done
}

containerd_up() {
  mkdir -p "$RUN/containerd" "$STATE" "$RUN/cni/net.d" "$RUN/cni/ipam"
  cat >"$RUN/containerd/config.toml" <<EOF
version = 2
root = "$RUN/containerd/root"
state = "$STATE/containerd"
[grpc]
  address = "$SOCK"
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
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$RUN/cni/net.d"
EOF
  # A bridge without an address on the host and without a default route
  # in the pods: pod traffic stays between the pods of this node.
  cat >"$RUN/cni/net.d/10-basin-e2e.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "basin-e2e",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "basin-e2e0",
      "isGateway": false,
      "ipMasq": false,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "dataDir": "$RUN/cni/ipam"}
    }
  ]
}
EOF
  start containerd containerd --config "$RUN/containerd/config.toml"
  wait_for containerd 30 ctr --address "$SOCK" version
}

images() {
  local img=$RUN/images
  mkdir -p "$img"
  local kb=$1
  # The sandbox image: a static program that waits for its signal.
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$img/pause" "$repo/hack/k8s/pause"
  go run "$repo/hack/image" --tag basin.local/pause:v1 --out "$img/pause.tar" \
    --file "$img/pause:/pause:0755" --entrypoint /pause >/dev/null
  go run "$repo/hack/image" --tag registry.k8s.io/sig-storage/csi-provisioner:v5.3.0 --out "$img/csi-provisioner.tar" \
    --file "$kb/csi-provisioner:/csi-provisioner:0755" --entrypoint /csi-provisioner >/dev/null
  # The test pods' image: busybox with a link per applet.
  local links=()
  for a in $(/bin/busybox --list); do [ "$a" = busybox ] || links+=(--symlink "/bin/$a:/bin/busybox"); done
  go run "$repo/hack/image" --tag basin.local/busybox:v1 --out "$img/busybox.tar" \
    --file /bin/busybox:/bin/busybox:0755 "${links[@]}" --env PATH=/bin --entrypoint /bin/sh >/dev/null
  for t in "$img"/pause.tar "$img"/csi-provisioner.tar "$img"/busybox.tar "$BASIN_IMAGE_TAR"; do
    ctr --address "$SOCK" -n k8s.io images import "$t" >/dev/null
  done
}

control_plane() {
  local kb=$1 p=$RUN/pki
  mkdir -p "$RUN/etcd"
  start etcd "$kb/etcd" --name basin-e2e --data-dir "$RUN/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster basin-e2e=http://127.0.0.1:2380 --listen-metrics-urls= --log-level warn
  start kube-apiserver "$kb/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port=6443 \
    --service-cluster-ip-range=$SERVICE_CIDR --endpoint-reconciler-type=none \
    --client-ca-file="$p/ca.crt" --tls-cert-file="$p/apiserver.crt" --tls-private-key-file="$p/apiserver.key" \
    --service-account-key-file="$p/sa.pub" --service-account-signing-key-file="$p/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc \
    --kubelet-client-certificate="$p/apiserver-kubelet.crt" --kubelet-client-key="$p/apiserver-kubelet.key" \
    --kubelet-certificate-authority="$p/ca.crt" --kubelet-preferred-address-types=Hostname \
    --authorization-mode=Node,RBAC --allow-privileged=true --v=1
  wait_for kube-apiserver 60 "$kb/kubectl" --kubeconfig "$RUN/admin.kubeconfig" get --raw /readyz
  start kube-controller-manager "$kb/kube-controller-manager" --kubeconfig="$RUN/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$RUN/controller-manager.kubeconfig" --authorization-kubeconfig="$RUN/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --leader-elect=false --service-account-private-key-file="$p/sa.key" \
    --root-ca-file="$p/ca.crt" --use-service-account-credentials=true --allocate-node-cidrs=false --v=1
  start kube-scheduler "$kb/kube-scheduler" --kubeconfig="$RUN/scheduler.kubeconfig" \
    --authentication-kubeconfig="$RUN/scheduler.kubeconfig" --authorization-kubeconfig="$RUN/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --leader-elect=false --v=1
}

kubelet_up() {
  local kb=$1 p=$RUN/pki
  mkdir -p "$KUBELET_DIR" "$RUN/volume-plugins"
  # Bidirectional mount propagation needs a shared kubelet directory.
  if ! findmnt -n "$KUBELET_DIR" >/dev/null; then
    mount --bind "$KUBELET_DIR" "$KUBELET_DIR"
  fi
  mount --make-rshared "$KUBELET_DIR"
  : >"$RUN/resolv.conf"
  cat >"$RUN/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$p/ca.crt"}
authorization: {mode: Webhook}
tlsCertFile: "$p/kubelet.crt"
tlsPrivateKeyFile: "$p/kubelet.key"
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$SOCK
volumePluginDir: "$RUN/volume-plugins"
resolvConf: "$RUN/resolv.conf"
# Republish (requiresRepublish: credential rotation) and pod status come
# with the pod sync period.
syncFrequency: 10s
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}
imageGCHighThresholdPercent: 100
serializeImagePulls: false
maxPods: 50
EOF
  start kubelet "$kb/kubelet" --config="$RUN/kubelet.yaml" --kubeconfig="$RUN/kubelet.kubeconfig" \
    --hostname-override=$NODE --root-dir="$KUBELET_DIR" --v=2
  wait_for "node $NODE" 90 "$kb/kubectl" --kubeconfig "$RUN/admin.kubeconfig" wait --for=condition=Ready "node/$NODE" --timeout=2s
}

object_stores() {
  mkdir -p "$RUN/minio" "$RUN/gcs"
  # Generated per run; kept in $RUN/env (0600) for the tests and people.
  local key secret
  key=e2e$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
  secret=$(od -An -N18 -tx1 /dev/urandom | tr -d ' \n')
  # Credentials through the environment, never argv.
  (export MINIO_ROOT_USER=$key MINIO_ROOT_PASSWORD=$secret MINIO_BROWSER=off
   start minio "$TOOLS/bin/minio" server --quiet --address "127.0.0.1:$MINIO_PORT" "$RUN/minio")
  start fake-gcs-server "$TOOLS/bin/fake-gcs-server" -scheme http -host 127.0.0.1 -port "$GCS_PORT" \
    -backend filesystem -filesystem-root "$RUN/gcs" -public-host "127.0.0.1:$GCS_PORT" -external-url "http://127.0.0.1:$GCS_PORT"
  umask 077
  cat >"$RUN/env" <<EOF
export KUBECONFIG=$RUN/admin.kubeconfig
export BASIN_K8S_DIR=$RUN
export BASIN_K8S_BIN=$KB
export BASIN_K8S_MINIO_ENDPOINT=http://127.0.0.1:$MINIO_PORT
export BASIN_K8S_MINIO_ACCESS_KEY=$key
export BASIN_K8S_MINIO_SECRET_KEY=$secret
export BASIN_K8S_GCS_ENDPOINT=http://127.0.0.1:$GCS_PORT
export BASIN_K8S_IMAGE=$BASIN_IMAGE
export BASIN_K8S_CONTAINERD=$SOCK
EOF
  umask 022
  wait_for minio 60 curl -sf "http://127.0.0.1:$MINIO_PORT/minio/health/live"
}

# The overlay a cluster test may apply: image names, pull policy, the
# host's network (MinIO is on its loopback), endpoints. Nothing else.
overlay() {
  local o=$RUN/overlay
  mkdir -p "$o"
  local name=${BASIN_IMAGE%:*} tag=${BASIN_IMAGE##*:}
  cp -r "$repo/tests/k8s/overlay/." "$o/"
  ln -sfn "$repo/deploy/kubernetes" "$o/base"
  cat >>"$o/kustomization.yaml" <<EOF
images:
  - name: ghcr.io/basin-csi/basin
    newName: $name
    newTag: "$tag"
EOF
}

deploy() {
  local kb=$1
  overlay
  "$kb/kubectl" --kubeconfig "$RUN/admin.kubeconfig" apply -k "$RUN/overlay" >"$RUN/logs/apply.log"
  local k=("$kb/kubectl" --kubeconfig "$RUN/admin.kubeconfig" -n basin-system)
  # The holder's updateStrategy is OnDelete: rollout status refuses it.
  wait_for "basin-fdholder ready" 120 bash -c "[ \"\$('$kb/kubectl' --kubeconfig '$RUN/admin.kubeconfig' -n basin-system get ds basin-fdholder -o jsonpath='{.status.numberReady}')\" = 1 ]"
  "${k[@]}" rollout status daemonset/basin-node --timeout=120s >/dev/null
  "${k[@]}" rollout status deployment/basin-controller --timeout=120s >/dev/null
  wait_for "CSINode registration" 60 bash -c "'$kb/kubectl' --kubeconfig '$RUN/admin.kubeconfig' get csinode $NODE -o jsonpath='{.spec.drivers[*].name}' | grep -q basin.csi.dev"
}

up() {
  [ "$(id -u)" = 0 ] || die "needs root"
  [ -n "${BASIN_IMAGE_TAR:-}" ] && [ -f "$BASIN_IMAGE_TAR" ] || die "BASIN_IMAGE_TAR (make image) missing"
  [ -n "${BASIN_IMAGE:-}" ] || die "BASIN_IMAGE (the image's reference) missing"
  if [ -e "$RUN" ]; then log "a cluster of this script is here; taking it down first"; (down); fi
  refuse_foreign
  KB=$(k8s_bin)
  export PATH=$KB:$PATH
  mkdir -p "$RUN/logs" "$RUN/pids"
  log "certificates"; pki
  log "containerd"; containerd_up
  log "images"; images "$KB"
  log "object stores"; object_stores
  log "control plane"; control_plane "$KB"
  log "kubelet"; kubelet_up "$KB"
  log "Basin (kubectl apply -k)"; deploy "$KB"
  log "ready: source $RUN/env (KUBECONFIG=$RUN/admin.kubeconfig; kubectl is $KB/kubectl)"
}

# refuse_foreign stops `up` when another Kubernetes uses this machine:
# `down` removes every pod cgroup, CNI network namespace and KUBE-*
# iptables chain it finds, which is safe only if this script made them.
refuse_foreign() {
  local why=()
  pgrep -x kubelet >/dev/null && why+=("a kubelet is running")
  [ -e "$KUBELET_DIR" ] && why+=("$KUBELET_DIR exists")
  compgen -G '/sys/fs/cgroup/*/kubepods*' >/dev/null && why+=("kubepods cgroups exist")
  ip netns list 2>/dev/null | grep -q '^cni-' && why+=("CNI network namespaces exist")
  iptables -S 2>/dev/null | grep -q '^-N KUBE-' && why+=("KUBE-* iptables chains exist")
  [ ${#why[@]} -eq 0 ] || die "another Kubernetes seems to use this machine (${why[*]}); not starting one beside it"
}

# ---------------------------------------------------------------- down

# kill_pidfile NAME: stops the process recorded for NAME.
kill_pidfile() {
  local f=$RUN/pids/$1 pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

# Every process in the pods' cgroups, and containerd's shims.
kill_pods() {
  local procs
  for _ in 1 2 3; do
    procs=$( { find /sys/fs/cgroup/ -path '*kubepods*' -name cgroup.procs -exec cat {} + 2>/dev/null || true; } | sort -u)
    procs+=" $(pgrep -f "containerd-shim.*-address $SOCK" || true)"
    [ -n "${procs// /}" ] || break
    kill -9 $procs 2>/dev/null || true
    sleep 0.5
  done
}

# Removes the cgroups kubelet made (deepest first), in every hierarchy.
remove_cgroups() {
  local d
  for d in /sys/fs/cgroup/*/kubepods* /sys/fs/cgroup/kubepods*; do
    [ -d "$d" ] || continue
    find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
}

# Unmounts everything at or below each path, deepest first.
unmount_under() {
  local p m
  for p in "$@"; do
    for _ in 1 2 3; do
      m=$(awk -v p="$p" '$5 == p || index($5, p "/") == 1 {print $5}' /proc/self/mountinfo | sort -r | uniq)
      [ -n "$m" ] || break
      while read -r x; do umount -l "$x" 2>/dev/null || true; done <<<"$m"
    done
  done
}

remove_iptables() {
  local t c
  for t in filter nat mangle; do
    for c in $(iptables -t "$t" -S 2>/dev/null | awk '/^-N KUBE-/ {print $2}'); do
      # rules in built-in chains that jump to it
      iptables -t "$t" -S 2>/dev/null | grep -- "-j $c\( \|$\)" | grep -v "^-A $c " | sed 's/^-A/-D/' |
        while read -r rule; do eval iptables -t "$t" $rule 2>/dev/null || true; done
      iptables -t "$t" -F "$c" 2>/dev/null || true
    done
    for c in $(iptables -t "$t" -S 2>/dev/null | awk '/^-N KUBE-/ {print $2}'); do
      iptables -t "$t" -X "$c" 2>/dev/null || true
    done
  done
}

remove_netns() {
  local n
  for n in $(ip netns list 2>/dev/null | awk '/^cni-/ {print $1}'); do ip netns delete "$n" 2>/dev/null || true; done
  ip link delete basin-e2e0 2>/dev/null || true
}

down() {
  [ "$(id -u)" = 0 ] || die "needs root"
  # Only what `up` made: without its directory there is nothing of ours.
  if [ ! -e "$RUN" ]; then log "no cluster of this script here ($RUN is absent)"; return 0; fi
  # Best effort from here on: every step runs, whatever failed before it.
  set +e +o pipefail
  log "stopping"
  kill_pidfile kubelet
  kill_pods
  for n in kube-scheduler kube-controller-manager kube-apiserver etcd minio fake-gcs-server containerd; do kill_pidfile "$n"; done
  kill_pods
  remove_cgroups
  unmount_under "$KUBELET_DIR" "$RUN" "$STATE" /run/netns "$BASIN_DIR"
  remove_netns
  remove_iptables
  # Only once nothing is mounted below them, and never across a mount.
  local d left
  for d in "$KUBELET_DIR" "$RUN" "$STATE" "$BASIN_DIR"; do
    left=$(awk -v p="$d" 'index($5, p "/") == 1 || $5 == p' /proc/self/mountinfo)
    if [ -n "$left" ]; then log "still mounted under $d; not removing it"; continue; fi
    rm -rf --one-file-system "$d"
  done
  log "down"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
