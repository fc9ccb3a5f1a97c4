#!/usr/bin/env bash
# Basin benchmark (issue 7): Basin vs rclone, s3fs, gcsfuse and a local
# directory, behind an emulated WAN. Writes bench/results/<date>[-quick].md
# (+ .png, .json).
#
#   bench/run.sh             full run   (make bench)
#   bench/run.sh --quick     reduced run, a few minutes (make bench-quick)
#   bench/run.sh --quick -systems rclone,local     any basin-bench flag
#
# Needs root (FUSE mounts, drop_caches). Installs what is missing: what the
# tests use (hack/install-tools.sh: rclone, fuse3, python3-torch, python3-torchvision, MinIO,
# fake-gcs-server), then s3fs from apt and gcsfuse into
# ~/.cache/basin-tools/bin. A peer that cannot be installed is reported as
# n/a. Environment:
#   BENCH_WORK        work directory (default /var/tmp/basin-bench; data sets
#                     and server data are kept there and reused)
#   BENCH_NO_INSTALL  set to 1 to skip all installation
#   BENCH_SHAREDTIER  "only": play only the scenario "three nodes, one data
#                     set" (bench/cmd/sharedtier); "skip": leave it out
#   BENCH_SECONDPV    "only": play only the scenario "a second PV of the same
#                     dataset" (bench/cmd/secondpv); "skip": leave it out
set -euo pipefail

cd "$(dirname "$0")/.."
WORK=${BENCH_WORK:-/var/tmp/basin-bench}
TOOLS=${BASIN_TOOLS_DIR:-$HOME/.cache/basin-tools}/bin
mkdir -p "$WORK/bin" "$TOOLS"

if [[ $(id -u) != 0 ]]; then
  echo "bench/run.sh: run as root (FUSE mounts and drop_caches need it)" >&2
  exit 1
fi

warn() { echo "bench/run.sh: warning: $*" >&2; }

install_tools() {
  hack/install-tools.sh || warn "hack/install-tools.sh failed; the systems and scenarios it serves may be n/a"
  if ! command -v s3fs >/dev/null; then
    echo "installing from apt: s3fs"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq s3fs; } \
      || warn "apt-get install s3fs failed; s3fs will be n/a"
  fi
  [[ -x $TOOLS/gcsfuse ]] || GOBIN=$TOOLS GOTOOLCHAIN=go1.27.3 \
    go install github.com/googlecloudplatform/gcsfuse/v3@v3.13.0 \
    || warn "gcsfuse build failed; gcsfuse will be n/a"
}

[[ ${BENCH_NO_INSTALL:-} == 1 ]] || install_tools

rm -f "$WORK/bin/csi-driver"
go build -o "$WORK/bin/csi-driver" ./cmd/csi-driver \
  || warn "cmd/csi-driver does not build; Basin will be n/a"
go build -o "$WORK/bin/basin-bench" ./bench/cmd/basin-bench

# A scenario played "only" leaves out the main benchmark and the others.
only=""
[[ ${BENCH_SHAREDTIER:-} != only ]] || only=sharedtier
[[ ${BENCH_SECONDPV:-} != only ]] || only=${only:+$only,}secondpv
plays() { # plays NAME VAR: whether scenario NAME (its variable VAR) is played
  local v=${!2:-}
  [[ $v != skip ]] && { [[ -z $only ]] || [[ ,$only, == *,$1,* ]]; }
}

go build -o "$WORK/bin/sharedtier" ./bench/cmd/sharedtier \
  || { warn "bench/cmd/sharedtier does not build; the shared-tier scenario is left out"; BENCH_SHAREDTIER=skip; }
go build -o "$WORK/bin/secondpv" ./bench/cmd/secondpv \
  || { warn "bench/cmd/secondpv does not build; the second-PV scenario is left out"; BENCH_SECONDPV=skip; }

if [[ -z $only ]]; then
"$WORK/bin/basin-bench" -work "$WORK" -tools "$TOOLS" -basin "$WORK/bin/csi-driver" \
  -command "bench/run.sh${*:+ $*}" "$@"
fi

# The node-level scenarios have their own servers and reports,
# bench/results/<date>-<name>[-quick].md: "three nodes, one data set"
# (shared cache tier) and "a second PV of the same dataset".
quick=()
for a in "$@"; do [[ $a == --quick || $a == -quick ]] && quick=(-quick); done
if plays sharedtier BENCH_SHAREDTIER; then
  "$WORK/bin/sharedtier" -work "$WORK/sharedtier" -tools "$TOOLS" -basin "$WORK/bin/csi-driver" \
    -command "bench/run.sh${*:+ $*} (sharedtier)" "${quick[@]}" \
    || warn "the shared-tier scenario failed (see above)"
fi
if plays secondpv BENCH_SECONDPV; then
  "$WORK/bin/secondpv" -work "$WORK/secondpv" -tools "$TOOLS" -basin "$WORK/bin/csi-driver" \
    -command "bench/run.sh${*:+ $*} (secondpv)" "${quick[@]}" \
    || warn "the second-PV scenario failed (see above)"
fi
[[ -z $only ]] || exit 0

# The README's table is the newest report's, spliced between its markers.
report=$(ls -t bench/results/*.md | grep -v -e sharedtier -e secondpv | head -1)
awk -v report="$report" '
  /<!-- bench:begin -->/ {
    print; print "From [" report "](" report "), produced by `bench/run.sh`:"; print ""
    while ((getline line < report) > 0) {
      if (line ~ /^\| Scenario \| Phase \| Unit/) on = 1
      else if (on && line !~ /^\|/) break
      if (on) print line
    }
    skip = 1; next
  }
  /<!-- bench:end -->/ { skip = 0 }
  !skip' README.md > README.md.tmp && mv README.md.tmp README.md
echo "README.md: benchmark table updated from $report"
