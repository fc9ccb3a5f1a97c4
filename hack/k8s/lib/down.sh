# Teardown of the test cluster (sourced by cluster.sh). Best effort: every
# step runs whatever failed before it, and each removes only what `up`
# made: processes by recorded pid, by the nodes' cgroups and by the
# namespaces of this run; the run's network namespaces, bridge, cgroups,
# directories and the host paths it created.

# kill_pidfile NAME: stops the process recorded for NAME (SIGTERM, then
# SIGKILL after 10s).
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

# ns_ids: the inode numbers of this run's network and mount namespaces,
# from the anchors and the network namespaces still listed.
ns_ids() {
  local f ns
  for f in "$RUN"/pids/*-anchor; do
    [ -f "$f" ] && stat -L -c %i "/proc/$(cat "$f")/ns/mnt" 2>/dev/null
  done
  for ns in $(ip netns list 2>/dev/null | awk '/^basin-k8s-/ {print $1}'); do
    stat -L -c %i "/run/netns/$ns" 2>/dev/null
  done
  return 0
}

# run_procs IDS: every process in the nodes' cgroups, in one of the
# namespaces IDS (ns_ids), or a shim of one of the nodes' containerds.
run_procs() {
  local ids=$1 n
  for n in $(node_names); do
    find /sys/fs/cgroup/*/"$n" -name cgroup.procs -exec cat {} + 2>/dev/null
    pgrep -f "containerd-shim.*-address $(node_sock "$n")"
  done
  [ -n "$ids" ] || return 0
  stat -L -c '%i %n' /proc/[0-9]*/ns/net /proc/[0-9]*/ns/mnt 2>/dev/null |
    awk -v ids="$ids" 'BEGIN { n = split(ids, a); for (i = 1; i <= n; i++) want[a[i]] = 1 }
      want[$1] { split($2, p, "/"); print p[3] }'
  return 0
}

# kill_run_procs: SIGKILL to run_procs until none is left (never this
# script or its parents).
kill_run_procs() {
  local ids procs
  ids=$(ns_ids | sort -u | tr '\n' ' ')
  for _ in 1 2 3 4 5 6; do
    procs=$(run_procs "$ids" | sort -un | grep -vxE "$$|$PPID|$BASHPID" || true)
    [ -n "$procs" ] || return 0
    # shellcheck disable=SC2086
    kill -9 $procs 2>/dev/null || true
    sleep 0.5
  done
  log "processes left: $(run_procs "$ids" | sort -un | tr '\n' ' ')"
}

# remove_cgroups: the nodes' cgroups in every hierarchy, deepest first.
remove_cgroups() {
  local n d
  for n in $(node_names); do
    for d in /sys/fs/cgroup/*/"$n"; do
      [ -d "$d" ] || continue
      find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
      [ -d "$d" ] && log "cgroup $d left"
    done
  done
}

# Unmounts everything at or below each path, deepest first.
unmount_under() {
  local p m x
  for p in "$@"; do
    for _ in 1 2 3; do
      m=$(awk -v p="$p" '$5 == p || index($5, p "/") == 1 {print $5}' /proc/self/mountinfo | sort -r | uniq)
      [ -n "$m" ] || break
      while read -r x; do umount -l "$x" 2>/dev/null || true; done <<<"$m"
    done
  done
}

remove_network() {
  local ns l
  # The host ends of the namespaces' veths first: a deleted namespace
  # frees its veth only when the kernel's asynchronous clean-up of it
  # runs, which took over 20 s once, and the next `up` then failed
  # ("RTNETLINK answers: File exists").
  for l in $(ip -o link show 2>/dev/null | awk -F': ' -v b="$BRIDGE-" 'index($2, b) == 1 {split($2, a, "@"); print a[1]}'); do
    ip link delete "$l" 2>/dev/null || true
  done
  for ns in $(ip netns list 2>/dev/null | awk '/^basin-k8s-/ {print $1}'); do ip netns delete "$ns" 2>/dev/null || true; done
  ip link delete "$BRIDGE" 2>/dev/null || true
  # `ip netns add` made /run/netns a mount point; undo it if it was not
  # one before and no other namespace is there.
  if [ -e "$RUN/made-run-netns" ] && [ -z "$(ls -A /run/netns 2>/dev/null)" ]; then
    umount /run/netns 2>/dev/null || true
    rmdir /run/netns 2>/dev/null || true
  fi
}

down() {
  [ "$(id -u)" = 0 ] || die "needs root"
  # Only what `up` made: without its directory there is nothing of ours.
  if [ ! -e "$RUN" ]; then log "no cluster of this script here ($RUN is absent)"; return 0; fi
  set +e +o pipefail
  [ -f "$RUN/nodes-count" ] && NODES=$(cat "$RUN/nodes-count")
  local t0=$SECONDS n d left
  log "stopping"
  for n in $(node_names); do kill_pidfile "$n-kube-proxy" & kill_pidfile "$n-kubelet" & done
  wait
  kill_run_procs
  for n in $(node_names); do kill_pidfile "$n-containerd"; done
  for n in cp-kube-proxy kube-scheduler kube-controller-manager kube-apiserver etcd minio fake-gcs-server; do kill_pidfile "$n"; done
  # The anchors last: with them the nodes' mount namespaces go.
  kill_run_procs
  for n in $(node_names); do kill_pidfile "$n-anchor"; done
  remove_cgroups
  remove_network
  # kubelet's kernel settings back to what they were before `up`.
  [ -f "$RUN/sysctls" ] && sysctl -q -p "$RUN/sysctls"
  unmount_under "$RUN" "$STATE"
  if [ -f "$RUN/made-dirs" ]; then
    tac "$RUN/made-dirs" | while read -r d; do
      mountpoint -q "$d" || rmdir "$d" 2>/dev/null || log "$d not empty; left"
    done
  fi
  # The logs outlive the run where asked (make k8s-e2e: _output/k8s-logs).
  if [ -n "${BASIN_K8S_KEEP_LOGS:-}" ] && [ -d "$RUN/logs" ]; then
    rm -rf "$BASIN_K8S_KEEP_LOGS" && mkdir -p "$BASIN_K8S_KEEP_LOGS" && cp -r "$RUN/logs/." "$BASIN_K8S_KEEP_LOGS/"
  fi
  # Only once nothing is mounted below them, and never across a mount.
  for d in "$RUN" "$STATE"; do
    left=$(awk -v p="$d" 'index($5, p "/") == 1 || $5 == p' /proc/self/mountinfo)
    if [ -n "$left" ]; then log "still mounted under $d; not removing it"; continue; fi
    rm -rf --one-file-system "$d"
  done
  log "down after $((SECONDS - t0))s"
}
