#!/usr/bin/env bash
# Runs csi-sanity (kubernetes-csi/csi-test v5) against the real
# `csi-driver controller` and `csi-driver node` binaries and a real MinIO
# started here, with provisioning=bucket (the Go test TestSanity in
# pkg/driver covers provisioning=prefix). The node stages every volume with
# a real FUSE process, so this needs root and /dev/fuse.
#
# Two passes:
#   1. the Identity (and GroupController) specs against the controller;
#   2. the Controller and Node specs, with the controller and node plugins
#      on their own sockets, as in a cluster.
#
# Usage: tests/sanity/run.sh [path/to/csi-driver]   (default: build it)
set -euo pipefail
cd "$(dirname "$0")/../.."

TOOLS_DIR=${BASIN_TOOLS_DIR:-$HOME/.cache/basin-tools}
export PATH=$TOOLS_DIR/bin:$PATH
need() {
  command -v "$1" >/dev/null && return
  echo "sanity: $1 not found; install it with: $2" >&2
  exit 1
}
need csi-sanity "hack/install-tools.sh (make tools)"
need minio "hack/install-tools.sh (make tools)"
need curl "apt-get install curl"
[ "$(id -u)" = 0 ] && [ -e /dev/fuse ] || { echo "sanity: the node plugin mounts FUSE: run as root with /dev/fuse" >&2; exit 1; }

work=$(mktemp -d /tmp/basin-sanity.XXXXXX) # short: socket paths have a 107-byte limit
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  # FUSE processes outlive the node plugin by design: stop them, and detach
  # every mount left under $work (deepest first) so none leaks.
  for f in $(grep -lzF -- "$work/cache/" /proc/[0-9]*/cmdline 2>/dev/null); do
    p=${f#/proc/}
    kill -KILL "${p%/cmdline}" 2>/dev/null || true
  done
  awk -v w="$work/" 'index($5, w) == 1 {print $5}' /proc/self/mountinfo | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

bin=${1:-}
if [ -z "$bin" ]; then
  go build -o "$work/csi-driver" ./cmd/csi-driver
  bin=$work/csi-driver
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port)
console=$(free_port)
endpoint=http://127.0.0.1:$port
access_key=basinsanity
secret_key=basin-sanity-secret-$RANDOM$RANDOM

MINIO_ROOT_USER=$access_key MINIO_ROOT_PASSWORD=$secret_key MINIO_BROWSER=off MINIO_UPDATE=off MINIO_REGION=us-east-1 \
  minio server "$work/minio" --quiet --address "127.0.0.1:$port" --console-address "127.0.0.1:$console" \
  >"$work/minio.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do
  curl -fsS "$endpoint/minio/health/live" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -fsS "$endpoint/minio/health/live" >/dev/null || { echo "sanity: MinIO did not start:" >&2; cat "$work/minio.log" >&2; exit 1; }

"$bin" controller --endpoint "unix://$work/controller.sock" --node-id sanity -v=2 >"$work/controller.log" 2>&1 &
pids+=($!)
"$bin" node --endpoint "unix://$work/node.sock" --node-id sanity --cache-root "$work/cache" \
  --state-file "$work/node/state.json" -v=2 >"$work/node.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  [ -S "$work/controller.sock" ] && [ -S "$work/node.sock" ] && break
  sleep 0.1
done

# Credentials go through files, never through argv.
cat >"$work/params.yaml" <<YAML
backend: s3
region: us-east-1
pathStyle: "true"
provisioning: bucket
cacheSize: 1Gi
YAML
secret="{accessKeyID: $access_key, secretAccessKey: $secret_key, endpoint: \"$endpoint\"}"
cat >"$work/secrets.yaml" <<YAML
CreateVolumeSecret: $secret
DeleteVolumeSecret: $secret
ControllerValidateVolumeCapabilitiesSecret: $secret
NodeStageVolumeSecret: $secret
YAML
chmod 0600 "$work/secrets.yaml"

status=0
passed=0 failed=0 skipped=0 pending=0
run_pass() { # name, csi-sanity args...
  local name=$1
  shift
  echo "=== csi-sanity: $name"
  if ! csi-sanity --ginkgo.no-color \
    --csi.secrets "$work/secrets.yaml" --csi.testvolumeparameters "$work/params.yaml" \
    --csi.testvolumesize 1073741824 \
    --csi.mountdir "$work/mnt" --csi.stagingdir "$work/staging" "$@" | tee "$work/$name.out"; then
    status=1
  fi
  local line
  line=$(grep -E '[0-9]+ Passed \| [0-9]+ Failed' "$work/$name.out" | tail -1)
  [ -n "$line" ] || { status=1; return; }
  passed=$((passed + $(sed -E 's/.* ([0-9]+) Passed.*/\1/' <<<"$line")))
  failed=$((failed + $(sed -E 's/.* ([0-9]+) Failed.*/\1/' <<<"$line")))
  pending=$((pending + $(sed -E 's/.* ([0-9]+) Pending.*/\1/' <<<"$line")))
  skipped=$((skipped + $(sed -E 's/.* ([0-9]+) Skipped.*/\1/' <<<"$line")))
}
# The GroupController specs ask the node endpoint's Identity service whether
# to run, so they go with the Identity specs.
run_pass identity --csi.endpoint "unix://$work/controller.sock" --ginkgo.focus 'Identity Service|GroupController'
run_pass controller-node --csi.endpoint "unix://$work/node.sock" --csi.controllerendpoint "unix://$work/controller.sock" \
  --ginkgo.skip 'Identity Service|GroupController'

echo
echo "csi-sanity total: $passed passed, $failed failed, $pending pending, $skipped skipped"
for log in controller node; do
  if grep -qF -e "$secret_key" "$work/$log.log"; then
    echo "sanity: the secret key appears in the $log log" >&2
    status=1
  fi
done
if [ "$status" != 0 ] || [ "$failed" != 0 ] || [ "$passed" -lt 35 ]; then
  echo "sanity: FAILED; controller and node logs:" >&2
  tail -n 50 "$work/controller.log" "$work/node.log" >&2
  exit 1
fi
