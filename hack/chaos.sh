#!/usr/bin/env bash
# make chaos: the chaos tests (tests/chaos) once on an idle machine and once
# with every core saturated by CPU burners (BASIN_CHAOS_LOAD=nproc), as on a
# training node whose data loaders keep the CPUs busy. Each variant writes
# its summaries to _output/chaos[-saturated]-{node-,writer-,}summary.txt;
# they are printed at the end, the saturated ones labelled, and the idle
# FUSE-kill summary (errors= kills= max_pause_ms= p50_pause_ms= kernel_eio=) last.
set -uo pipefail
GO=${GO:-go}
out=${CHAOS_OUTPUT:-_output}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# Tests run in both variants (a new chaos test with a summary joins here,
# gets an env var below and a line at the end); tests of correctness alone
# run idle only.
both='TestChaos$|TestChaosWriters|TestChaosNodePlugin|TestChaosSharedVolumes'
idle_only='TestTakeover|TestHung'
variants=${CHAOS_VARIANTS:-idle saturated}

rm -f "$out"/chaos-*summary.txt "$out"/chaos-summary.txt
status=0
for v in $variants; do
  case $v in
  idle) load=0 prefix=chaos run="$both|$idle_only" ;;
  saturated) load=nproc prefix=chaos-saturated run="$both" ;;
  *) echo "chaos: unknown variant $v" >&2; exit 2 ;;
  esac
  echo "=== chaos: $v (BASIN_CHAOS_LOAD=$load)"
  BASIN_CHAOS=${BASIN_CHAOS:-20} BASIN_CHAOS_LOAD=$load \
    BASIN_CHAOS_SUMMARY="$out/$prefix-summary.txt" \
    BASIN_CHAOS_NODE_SUMMARY="$out/$prefix-node-summary.txt" \
    BASIN_CHAOS_WRITER_SUMMARY="$out/$prefix-writer-summary.txt" \
    BASIN_CHAOS_SHARED_SUMMARY="$out/$prefix-shared-summary.txt" \
    "$GO" test -count=1 -timeout 15m -run "$run" -v ./tests/chaos/ 2>&1 | awk '!/^[IWE][0-9]/ || /fuse op failed/'
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
done

# summary FILE LABEL MISSING: print FILE's line with LABEL, or MISSING.
summary() {
  if [ -f "$1" ]; then
    sed "s/^/$2/" "$1"
  else
    echo "$2$3"
  fi
}
# summaries PREFIX LABEL: the three summaries of a variant.
summaries() {
  summary "$out/$1-writer-summary.txt" "$2" "writers: errors=? (no summary: the test did not finish)"
  summary "$out/$1-node-summary.txt" "$2" "node plugin restarts: errors=? (no summary: the test did not finish)"
  summary "$out/$1-shared-summary.txt" "$2" "shared volumes: errors=? (no summary: the test did not finish)"
  summary "$out/$1-summary.txt" "$2" "errors=? (no summary: the chaos test did not finish)"
}
case " $variants " in *" saturated "*) summaries chaos-saturated "saturated: " ;; esac
case " $variants " in *" idle "*) summaries chaos "" ;; esac
exit $status
