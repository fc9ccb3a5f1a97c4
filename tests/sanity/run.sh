#!/usr/bin/env bash
# Runs csi-sanity (kubernetes-csi/csi-test v5) against the real
# `csi-driver controller` binary and a real MinIO started here, with
# provisioning=bucket (the Go test TestSanity in pkg/driver covers
# provisioning=prefix).
#
# Two passes, because csi-sanity sends the Identity specs and its cleanup
# calls to the node endpoint:
#   1. the Identity (and GroupController) specs against the controller;
#   2. the Controller specs, with the node endpoint served by
#      tests/sanity/nodestub (a Node service without volumes) until the real
#      node plugin exists. Then: start `csi-driver node` instead of the stub,
#      drop 'Node Service' from the skip list, and run everything in one pass.
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
need csi-sanity "GOBIN=$TOOLS_DIR/bin go install github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity@v5.6.0"
need minio "GOBIN=$TOOLS_DIR/bin go install github.com/minio/minio@<version in .ci/run>"
need curl "apt-get install curl"

work=$(mktemp -d /tmp/basin-sanity.XXXXXX) # short: socket paths have a 107-byte limit
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

bin=${1:-}
if [ -z "$bin" ]; then
  go build -o "$work/csi-driver" ./cmd/csi-driver
  bin=$work/csi-driver
fi
go build -o "$work/nodestub" ./tests/sanity/nodestub

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
"$work/nodestub" --endpoint "unix://$work/node.sock" >"$work/nodestub.log" 2>&1 &
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
run_pass controller --csi.endpoint "unix://$work/node.sock" --csi.controllerendpoint "unix://$work/controller.sock" \
  --ginkgo.skip 'Node Service|Identity Service|GroupController'

echo
echo "csi-sanity total: $passed passed, $failed failed, $pending pending, $skipped skipped (Node specs skipped: no node plugin yet)"
if grep -qF -e "$secret_key" "$work/controller.log"; then
  echo "sanity: the secret key appears in the controller log" >&2
  status=1
fi
if [ "$status" != 0 ] || [ "$failed" != 0 ] || [ "$passed" -lt 15 ]; then
  echo "sanity: FAILED; controller log:" >&2
  tail -50 "$work/controller.log" >&2
  exit 1
fi
