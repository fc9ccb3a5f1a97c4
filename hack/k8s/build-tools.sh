#!/usr/bin/env bash
# Builds the binaries of the test cluster from the Go module proxy, once per
# version, into $BASIN_TOOLS_DIR/k8s-$K8S_VERSION-.../bin: etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
# kube-proxy, kubectl and csi-provisioner. Only the binaries missing from
# that directory are built, so CI's cached tools directory makes this a
# no-op, and a directory cached before a binary joined the list (kube-proxy)
# gets that one binary, not a rebuild of the others.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.34.4}
ETCD_VERSION=${ETCD_VERSION:-v3.6.4}
PROVISIONER_VERSION=${PROVISIONER_VERSION:-v5.3.0}
TOOLS=${BASIN_TOOLS_DIR:-$HOME/.cache/basin-tools}
out=$TOOLS/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-prov-$PROVISIONER_VERSION/bin
k8s_cmds=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
bins=(etcd csi-provisioner "${k8s_cmds[@]}")

have_all() { for b in "${bins[@]}"; do [ -x "$out/$b" ] || return 1; done; }
if have_all; then echo "$out"; exit 0; fi
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CGO_ENABLED=0 GOFLAGS=-mod=mod

log() { printf '[build-tools %s] %s\n' "$(date +%T)" "$*" >&2; }

# Kubernetes: a wrapper module; k8s.io/kubernetes's go.mod points its staging
# modules at ./staging, which a module download does not have, so each is
# pinned to the matching published version instead. Builds the commands
# given (those missing).
build_kubernetes() {
  local d=$work/kubernetes minor=${K8S_VERSION#v1.}
  mkdir -p "$d"
  go mod download -json "k8s.io/kubernetes@$K8S_VERSION" >"$d/dl.json"
  local gomod
  gomod=$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$K8S_VERSION.mod
  {
    echo "module basin.local/k8stools"
    echo "go 1.24.0"
    echo "godebug default=go1.24"
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo "replace ("
    sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/src/k8s\.io/[a-z0-9-]*$#\t\1 => \1 v0.'"$minor"'#p' "$gomod"
    echo ")"
  } >"$d/go.mod"
  cat >"$d/tools.go" <<'GO'
//go:build tools

package tools

import (
GO
  for c in "$@"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c"; done >>"$d/tools.go"
  echo ")" >>"$d/tools.go"
  (cd "$d" && go mod tidy >/dev/null 2>&1 || go mod tidy)
  local ld="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor%%.*}"
  for c in "$@"; do
    log "building $c $K8S_VERSION"
    (cd "$d" && go build -trimpath -ldflags "$ld" -o "$out/$c.tmp" "k8s.io/kubernetes/cmd/$c") && mv "$out/$c.tmp" "$out/$c"
  done
}

build_etcd() {
  local d=$work/etcd
  mkdir -p "$d"
  cat >"$d/go.mod" <<MOD
module basin.local/etcd
go 1.24.0
require go.etcd.io/etcd/server/v3 $ETCD_VERSION
MOD
  cat >"$d/main.go" <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  (cd "$d" && go mod tidy >/dev/null 2>&1 || (cd "$d" && go mod tidy))
  log "building etcd $ETCD_VERSION"
  (cd "$d" && go build -trimpath -ldflags "-s -w" -o "$out/etcd.tmp" .) && mv "$out/etcd.tmp" "$out/etcd"
}

build_provisioner() {
  local m=github.com/kubernetes-csi/external-provisioner/v5 src d=$work/provisioner
  src=$(go mod download -json "$m@$PROVISIONER_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  cp -r "$src" "$d" && chmod -R u+w "$d"
  log "building csi-provisioner $PROVISIONER_VERSION"
  (cd "$d" && go build -trimpath -ldflags "-s -w -X main.version=$PROVISIONER_VERSION" -o "$out/csi-provisioner.tmp" ./cmd/csi-provisioner) \
    && mv "$out/csi-provisioner.tmp" "$out/csi-provisioner"
}

[ -x "$out/etcd" ] || build_etcd
[ -x "$out/csi-provisioner" ] || build_provisioner
missing=()
for c in "${k8s_cmds[@]}"; do [ -x "$out/$c" ] || missing+=("$c"); done
[ ${#missing[@]} -eq 0 ] || build_kubernetes "${missing[@]}"
have_all
log "done"
echo "$out"
