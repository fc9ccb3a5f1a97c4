#!/usr/bin/env bash
# Regenerates what is generated from pkg/api: the deep-copy functions
# (zz_generated.deepcopy.go) and the CustomResourceDefinitions in
# deploy/kubernetes/crds, copied as they are into the Helm chart's crds/
# (deploy/helm/basin/crds). `make generate`; commit the result.
set -euo pipefail
cd "$(dirname "$0")/.."
# The version hack/install-tools.sh pins (and installs for the tests).
tools=${BASIN_TOOLS_DIR:-$HOME/.cache/basin-tools}/bin
if [ -z "${CONTROLLER_GEN:-}" ]; then
  if [ -x "$tools/controller-gen" ]; then
    CONTROLLER_GEN=$tools/controller-gen
  else
    CONTROLLER_GEN="go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.21.0"
  fi
fi
$CONTROLLER_GEN object paths=./pkg/api/...
$CONTROLLER_GEN crd:crdVersions=v1 paths=./pkg/api/... output:crd:dir=deploy/kubernetes/crds
rm -f deploy/helm/basin/crds/*.yaml
cp deploy/kubernetes/crds/*.yaml deploy/helm/basin/crds/
