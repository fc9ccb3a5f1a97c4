#!/usr/bin/env bash
# Installs what the tests need on a fresh Debian machine with Go, the same
# versions for `make test` (make tools), CI (.ci/run) and developers:
#   - apt packages: fuse3, fio, rclone, s3fs, python3-torch and python3-torchvision (bench scenarios);
#   - Go-built servers and tools, pinned, into $BASIN_TOOLS_DIR/bin
#     (default ~/.cache/basin-tools/bin): MinIO, fake-gcs-server,
#     csi-sanity, golangci-lint, controller-gen and helm.
# What is installed already (a Go tool at its pinned version) is left alone,
# so a second run costs about a second. A missing install step fails the
# script: the tests would otherwise skip (or, under CI=true, fail) later.
set -euo pipefail
cd "$(dirname "$0")/.."

# Pinned so every run uses the same servers; the module proxy refuses
# @latest for some of them.
MINIO=github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c
FAKE_GCS=github.com/fsouza/fake-gcs-server@v1.56.1
CSI_SANITY=github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity@v5.6.0
GOLANGCI_LINT=github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
# make generate, and the test that the generated files are current.
CONTROLLER_GEN=sigs.k8s.io/controller-tools/cmd/controller-gen@v0.21.0
# The chart's tests (tests/manifests: lint, template) and the cluster
# suite's helm install; built from the module proxy, never part of go.mod.
# The link flags are those of Helm's own release builds: the version it
# reports, and the Kubernetes version (its client-go's, 1.37) that
# `helm template` and `helm lint` assume without a cluster.
HELM=helm.sh/helm/v3/cmd/helm@v3.22.0
HELM_LDFLAGS="-X helm.sh/helm/v3/internal/version.version=v3.22.0 -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for p in pkg/chartutil pkg/lint/rules; do
  HELM_LDFLAGS+=" -X helm.sh/helm/v3/$p.k8sVersionMajor=1 -X helm.sh/helm/v3/$p.k8sVersionMinor=37"
done

TOOLS_DIR=${BASIN_TOOLS_DIR:-$HOME/.cache/basin-tools}
export GOBIN=$TOOLS_DIR/bin
mkdir -p "$GOBIN"

log() { printf '[install-tools %s] %s\n' "$(date +%T)" "$*" >&2; }

# One install at a time per tools directory (make test in two work trees).
exec 9>"$TOOLS_DIR/.install.lock"
flock 9

as_root() {
  if [ "$(id -u)" = 0 ]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    log "not root and no sudo: cannot run $*"
    return 1
  fi
}

apt_packages() {
  local need=()
  command -v fusermount3 >/dev/null || need+=(fuse3)
  command -v fio >/dev/null || need+=(fio)
  command -v rclone >/dev/null || need+=(rclone)
  command -v s3fs >/dev/null || need+=(s3fs) # reference mount: links and modes written by Basin
  /usr/bin/python3 -c 'import torch' 2>/dev/null || need+=(python3-torch)
  /usr/bin/python3 -c 'import torchvision' 2>/dev/null || need+=(python3-torchvision)
  ((${#need[@]})) || return 0
  log "apt: ${need[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}

# go_tool NAME MODULE/PATH@VERSION [LDFLAGS]: go install (with those link
# flags) unless $GOBIN/NAME was built from that module version with them
# (go version -m tells).
go_tool() {
  local name=$1 pkg=$2 version=${2##*@} ldflags=${3:-} have="" info
  if [ -x "$GOBIN/$name" ]; then
    info=$(go version -m "$GOBIN/$name" 2>/dev/null || true)
    have=$(awk '$1 == "mod" {print $3; exit}' <<<"$info")
    if [ -n "$ldflags" ] && ! grep -qF -- "-ldflags=\"$ldflags\"" <<<"$info"; then
      have="$have, other link flags"
    fi
  fi
  if [ "$have" = "$version" ]; then
    return 0
  fi
  log "building $name $version${have:+ (have $have)}"
  local start=$SECONDS
  go install ${ldflags:+-ldflags="$ldflags"} "$pkg"
  log "built $name in $((SECONDS - start))s"
}

start=$SECONDS
apt_packages
# Two builds at a time: the downloads overlap, the machine has 2 cores.
go_tool minio "$MINIO" &
minio=$!
trap 'kill "$minio" 2>/dev/null || true' ERR
go_tool golangci-lint "$GOLANGCI_LINT"
go_tool fake-gcs-server "$FAKE_GCS"
go_tool csi-sanity "$CSI_SANITY"
go_tool controller-gen "$CONTROLLER_GEN"
go_tool helm "$HELM" "$HELM_LDFLAGS"
wait "$minio"
log "tools ready in $GOBIN ($((SECONDS - start))s)"
