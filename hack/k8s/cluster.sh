#!/usr/bin/env bash
# A multi-node Kubernetes cluster on this machine, for Basin's cluster
# tests and for trying Basin by hand:
#
#   hack/k8s/cluster.sh up            start the control plane, NODES nodes
#                                     (default 3), MinIO and fake-gcs-server;
#                                     import the images; install Basin
#                                     with `helm install` (deploy/helm/basin
#                                     and tests/k8s/values.yaml)
#   hack/k8s/cluster.sh down          stop everything and remove what `up`
#                                     left: processes, mounts, namespaces,
#                                     the bridge, cgroups, files
#   hack/k8s/cluster.sh exec CMD...   run CMD in the control plane's network
#                                     namespace (the tests run there)
#   hack/k8s/cluster.sh stop-node N   stop node N's kubelet and kube-proxy
#   hack/k8s/cluster.sh start-node N  start them again
#
# Layout (lib/nodes.sh has the details): a bridge on the host without an
# address; the control plane in network namespace basin-k8s-cp at
# 10.250.0.10 (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, a kube-proxy so that the API server reaches the placement
# webhook through its Service); nodes node1..nodeN at 10.250.0.11.., each
# with its own network and mount namespace, containerd, kubelet,
# kube-proxy, pod CIDR 10.244.i.0/24 and cgroup root /nodeI.
#
# MinIO and fake-gcs-server run in the control plane's namespace, listening
# on its address and its loopback: pods and node plugins reach them at
# 10.250.0.10 through the nodes' routes, as they would reach a store
# outside the cluster, and need neither hostNetwork nor a Service. The host
# has no address on the bridge, so nothing on the host reaches the cluster
# but through `exec` (the tests) or $RUN/bin/kubectl (a kubectl that enters
# the namespace). No namespace routes off the bridge.
#
# Needs root, the binaries of hack/k8s/build-tools.sh, `make image`, and
# apt's containerd, runc, containernetworking-plugins, iptables, conntrack,
# busybox-static and openssl (hack/k8s/apt.sh installs them).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
RUN=${BASIN_K8S_DIR:-/var/lib/basin-k8s}
STATE=/run/basin-k8s
NODES=${NODES:-3}
NET=10.250.0
CP_IP=$NET.10
CP_NS=basin-k8s-cp
BRIDGE=bk8s0
MINIO_PORT=${BASIN_K8S_MINIO_PORT:-19000}
GCS_PORT=${BASIN_K8S_GCS_PORT:-19001}
TOOLS=${BASIN_TOOLS_DIR:-$HOME/.cache/basin-tools}
SERVICE_CIDR=10.96.0.0/24
KUBERNETES_SVC_IP=10.96.0.1

log() { printf '[cluster %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# shellcheck source=lib/pki.sh
. "$here/lib/pki.sh"
# shellcheck source=lib/nodes.sh
. "$here/lib/nodes.sh"
# shellcheck source=lib/down.sh
. "$here/lib/down.sh"

k8s_bin() { "$here/build-tools.sh" | tail -1; }

# start NAME CMD...: runs CMD in the background, logging to logs/NAME.log,
# its pid in pids/NAME. It gets no descriptor of ours but stdout and
# stderr: a lock the caller holds (flock /work/cluster.lock make k8s-up)
# is not held on by the cluster's processes.
start() {
  local name=$1; shift
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      [ "$fd" -gt 2 ] && eval "exec $fd>&-"
    done
    exec "$@"
  ) </dev/null >"$RUN/logs/$name.log" 2>&1 &
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

kctl() { in_ns "$CP_NS" "$KB/kubectl" --kubeconfig "$RUN/admin.kubeconfig" "$@"; }

# ---------------------------------------------------------------- up

images() {
  local img=$RUN/images
  mkdir -p "$img"
  cd "$repo"
  # The sandbox image: a static program that waits for its signal.
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$RUN/pause" "$repo/hack/k8s/pause"
  go run "$repo/hack/image" --tag basin.local/pause:v1 --out "$img/pause.tar" \
    --file "$RUN/pause:/pause:0755" --entrypoint /pause >/dev/null
  go run "$repo/hack/image" --tag registry.k8s.io/sig-storage/csi-provisioner:v5.3.0 --out "$img/csi-provisioner.tar" \
    --file "$KB/csi-provisioner:/csi-provisioner:0755" --entrypoint /csi-provisioner >/dev/null
  # The test pods' image: busybox with a link per applet.
  local links=() a
  for a in $(/bin/busybox --list); do [ "$a" = busybox ] || links+=(--symlink "/bin/$a:/bin/busybox"); done
  go run "$repo/hack/image" --tag basin.local/busybox:v1 --out "$img/busybox.tar" \
    --file /bin/busybox:/bin/busybox:0755 "${links[@]}" --env PATH=/bin --entrypoint /bin/sh >/dev/null
}

control_plane() {
  local p=$RUN/pki cp
  cp=$(enter_ns "$CP_NS")
  mkdir -p "$RUN/etcd"
  start etcd $cp "$KB/etcd" --name basin-e2e --data-dir "$RUN/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster basin-e2e=http://127.0.0.1:2380 --listen-metrics-urls= --log-level warn
  # The default (lease) endpoint reconciler: the `kubernetes` Service's
  # endpoint is the advertised address, reached through kube-proxy.
  start kube-apiserver $cp "$KB/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
    --bind-address=0.0.0.0 --advertise-address="$CP_IP" --secure-port=6443 \
    --service-cluster-ip-range=$SERVICE_CIDR \
    --client-ca-file="$p/ca.crt" --tls-cert-file="$p/apiserver.crt" --tls-private-key-file="$p/apiserver.key" \
    --service-account-key-file="$p/sa.pub" --service-account-signing-key-file="$p/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc \
    --kubelet-client-certificate="$p/apiserver-kubelet.crt" --kubelet-client-key="$p/apiserver-kubelet.key" \
    --kubelet-certificate-authority="$p/ca.crt" --kubelet-preferred-address-types=InternalIP \
    --authorization-mode=Node,RBAC --allow-privileged=true --v=1
  wait_for kube-apiserver 60 kctl get --raw /readyz
  start kube-controller-manager $cp "$KB/kube-controller-manager" --kubeconfig="$RUN/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$RUN/controller-manager.kubeconfig" --authorization-kubeconfig="$RUN/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --leader-elect=false --service-account-private-key-file="$p/sa.key" \
    --root-ca-file="$p/ca.crt" --use-service-account-credentials=true --allocate-node-cidrs=false \
    --flex-volume-plugin-dir="$RUN/flexvolume" --v=1
  start kube-scheduler $cp "$KB/kube-scheduler" --kubeconfig="$RUN/scheduler.kubeconfig" \
    --authentication-kubeconfig="$RUN/scheduler.kubeconfig" --authorization-kubeconfig="$RUN/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --leader-elect=false --v=1
  kube_proxy_up cp "$CP_IP" $cp
}

object_stores() {
  local cp key secret
  cp=$(enter_ns "$CP_NS")
  mkdir -p "$RUN/minio"
  # Generated per run; kept in $RUN/env (0600) for the tests and people.
  key=e2e$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
  secret=$(od -An -N18 -tx1 /dev/urandom | tr -d ' \n')
  # Credentials through the environment, never argv. Both listen on every
  # address of the control plane's namespace: its own and its loopback.
  # Its metrics need no token: the tests count requests per bucket.
  (export MINIO_ROOT_USER=$key MINIO_ROOT_PASSWORD=$secret MINIO_BROWSER=off MINIO_PROMETHEUS_AUTH_TYPE=public
   start minio $cp "$TOOLS/bin/minio" server --quiet --address ":$MINIO_PORT" --console-address "127.0.0.1:$((MINIO_PORT + 2))" "$RUN/minio")
  # fake-gcs-server keeps its objects in memory, as in the package tests:
  # its filesystem backend cannot hold "t" where "t/a/b" was (an upload
  # fails with 500 "file exists"), which real GCS does. No scenario
  # restarts it.
  start fake-gcs-server $cp "$TOOLS/bin/fake-gcs-server" -scheme http -host 0.0.0.0 -port "$GCS_PORT" \
    -backend memory -public-host "$CP_IP:$GCS_PORT" -external-url "http://$CP_IP:$GCS_PORT"
  umask 077
  cat >"$RUN/env" <<ENV
export KUBECONFIG=$RUN/admin.kubeconfig
export PATH=$RUN/bin:\$PATH
export BASIN_K8S_DIR=$RUN
export BASIN_K8S_BIN=$KB
export BASIN_K8S_NODES="$(node_names | tr '\n' ' ' | sed 's/ $//')"
export BASIN_K8S_STATE=$STATE
export BASIN_K8S_CP_IP=$CP_IP
export BASIN_K8S_MINIO_ENDPOINT=http://127.0.0.1:$MINIO_PORT
export BASIN_K8S_MINIO_CLUSTER_ENDPOINT=http://$CP_IP:$MINIO_PORT
export BASIN_K8S_MINIO_ACCESS_KEY=$key
export BASIN_K8S_MINIO_SECRET_KEY=$secret
export BASIN_K8S_GCS_ENDPOINT=http://$CP_IP:$GCS_PORT
export BASIN_K8S_IMAGE=$BASIN_IMAGE
export BASIN_K8S_CONTAINERD=$(node_sock node1)
export BASIN_K8S_KUBELET_DIR=$KUBELET_DIR
export BASIN_K8S_HELM=$TOOLS/bin/helm
ENV
  umask 022
  wait_for minio 60 in_ns "$CP_NS" curl -sf "http://127.0.0.1:$MINIO_PORT/minio/health/live"
}

# A kubectl for people on the host: it enters the control plane's
# namespace (the host has no address on the bridge).
kubectl_wrapper() {
  mkdir -p "$RUN/bin"
  cat >"$RUN/bin/kubectl" <<SH
#!/bin/sh
export KUBECONFIG=\${KUBECONFIG:-$RUN/admin.kubeconfig}
exec nsenter --net=/run/netns/$CP_NS -- "$KB/kubectl" "\$@"
SH
  chmod 755 "$RUN/bin/kubectl"
}

# helm_basin ARGS...: helm on the cluster (in the control plane's
# namespace, where the API server is).
helm_basin() {
  in_ns "$CP_NS" env HELM_CONFIG_HOME="$RUN/helm-home" HELM_CACHE_HOME="$RUN/helm-home" HELM_DATA_HOME="$RUN/helm-home" \
    "$TOOLS/bin/helm" --kubeconfig "$RUN/admin.kubeconfig" "$@"
}

# The values a cluster test installs with: tests/k8s/values.yaml (pull
# policies: the images were imported into every node), the image's name
# and tag, and the cluster's kubelet root. Everything else is the chart's
# defaults, as users install it.
install_values() {
  local name=${BASIN_IMAGE%:*} tag=${BASIN_IMAGE##*:}
  cp "$repo/tests/k8s/values.yaml" "$RUN/values.yaml"
  cat >>"$RUN/values.yaml" <<YAML
image:
  repository: $name
  tag: "$tag"
  pullPolicy: Never
kubeletDir: $KUBELET_DIR
YAML
}

nodes_ready() {
  local n
  for n in $(node_names); do
    kctl wait --for=condition=Ready "node/$n" --timeout=2s || return 1
  done
}

deploy() {
  [ -x "$TOOLS/bin/helm" ] || die "no helm in $TOOLS/bin (hack/install-tools.sh)"
  install_values
  helm_basin install basin "$repo/deploy/helm/basin" -n basin-system --create-namespace \
    -f "$RUN/values.yaml" >"$RUN/logs/helm-install.log"
  # The holder's updateStrategy is OnDelete: rollout status refuses it.
  wait_for "basin-fdholder ready on $NODES nodes" 180 \
    bash -c "[ \"\$($(enter_ns "$CP_NS") '$KB/kubectl' --kubeconfig '$RUN/admin.kubeconfig' -n basin-system get ds basin-fdholder -o jsonpath='{.status.numberReady}')\" = $NODES ]"
  kctl -n basin-system rollout status daemonset/basin-node --timeout=180s >/dev/null
  kctl -n basin-system rollout status deployment/basin-controller --timeout=180s >/dev/null
  # The API server calls the placement webhook through its Service: the
  # control plane's kube-proxy (which waits 30s for a Node of its name
  # that never comes) must have written the Service's rules.
  wait_for "the placement webhook's Service rules on the control plane" 90 \
    in_ns "$CP_NS" sh -c 'iptables -t nat -S KUBE-SERVICES | grep -q "basin-system/basin-placement"'
  local n
  for n in $(node_names); do
    wait_for "CSINode registration of $n" 60 \
      bash -c "$(enter_ns "$CP_NS") '$KB/kubectl' --kubeconfig '$RUN/admin.kubeconfig' get csinode $n -o jsonpath='{.spec.drivers[*].name}' | grep -q basin.csi.dev"
  done
}

up() {
  [ "$(id -u)" = 0 ] || die "needs root"
  [ -n "${BASIN_IMAGE_TAR:-}" ] && [ -f "$BASIN_IMAGE_TAR" ] || die "BASIN_IMAGE_TAR (make image) missing"
  [ -n "${BASIN_IMAGE:-}" ] || die "BASIN_IMAGE (the image's reference) missing"
  [[ $NODES =~ ^[1-9]$ ]] || die "NODES=$NODES: 1 to 9"
  if [ -e "$RUN" ]; then log "a cluster of this script is here; taking it down first"; (down); fi
  refuse_foreign
  KB=$(k8s_bin)
  export PATH=$KB:$PATH
  local t0=$SECONDS n
  mkdir -p "$RUN/logs" "$RUN/pids" "$STATE"
  : >"$RUN/resolv.conf"
  echo "$NODES" >"$RUN/nodes-count"
  log "certificates"; pki
  log "network: bridge $BRIDGE, control plane $CP_IP, $NODES nodes"
  mountpoint -q /run/netns || touch "$RUN/made-run-netns"
  network_up
  host_mountpoints
  save_sysctls
  log "images (in the background), control plane, object stores"
  images >"$RUN/logs/images.log" 2>&1 &
  local img=$!
  control_plane; object_stores; kubectl_wrapper
  wait $img || die "images: $(tail -5 "$RUN/logs/images.log")"
  log "nodes: $(node_names | tr '\n' ' ')"
  local pids=()
  for n in $(node_names); do (node_up "$n") & pids+=($!); done
  for n in "${pids[@]}"; do wait "$n" || die "a node did not start (logs: $RUN/logs)"; done
  wait_for "$NODES nodes Ready" 120 nodes_ready
  log "nodes Ready after $((SECONDS - t0))s"
  log "Basin (helm install, kubelet root $KUBELET_DIR)"; deploy
  log "ready after $((SECONDS - t0))s: . $RUN/env, then kubectl (runs in the control plane's namespace)"
}

# refuse_foreign stops `up` when another Kubernetes uses this machine:
# `down` stops every process in the nodes' cgroups and namespaces, which is
# safe only if this script made them.
refuse_foreign() {
  local why=() n
  pgrep -x kubelet >/dev/null && why+=("a kubelet is running")
  compgen -G '/sys/fs/cgroup/*/kubepods*' >/dev/null && why+=("kubepods cgroups exist")
  for n in $(node_names); do
    compgen -G "/sys/fs/cgroup/*/$n" >/dev/null && why+=("cgroups /$n exist")
  done
  ip netns list 2>/dev/null | grep -q '^basin-k8s-' && why+=("basin-k8s-* network namespaces exist")
  ip link show "$BRIDGE" >/dev/null 2>&1 && why+=("the bridge $BRIDGE exists")
  [ ${#why[@]} -eq 0 ] || die "another Kubernetes seems to use this machine (${why[*]}); not starting one beside it"
}

# node_proc NODE start|stop: the node's kubelet and kube-proxy (the "node
# leaves" scenario; its containers keep running until `down`).
node_proc() {
  local n=$1
  [ -f "$RUN/pids/$n-anchor" ] || die "no node $n"
  KB=$(sed -n 's/^export BASIN_K8S_BIN=//p' "$RUN/env")
  case $2 in
    stop) kill_pidfile "$n-kube-proxy"; kill_pidfile "$n-kubelet" ;;
    start) kubelet_start "$n"; kube_proxy_start "$n" $(enter_node "$n") ;;
  esac
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  exec) shift; [ -f "$RUN/env" ] || die "no cluster (make k8s-up)"; exec nsenter --net="/run/netns/$CP_NS" -- "$@" ;;
  stop-node) node_proc "${2:?node}" stop ;;
  start-node) node_proc "${2:?node}" start ;;
  *) echo "usage: $0 up|down|exec CMD...|stop-node NODE|start-node NODE" >&2; exit 2 ;;
esac
