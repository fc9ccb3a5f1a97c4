#!/usr/bin/env bash
# make soak: TestSoak (tests/chaos/soak_test.go) for $DURATION (default 5m)
# with the fault schedule of $SOAK_SEED (default: a random seed, printed at
# the start and in the last line; a failing run replays with the same
# SOAK_SEED). Real MinIO, the real node plugin and descriptor holder, real
# FUSE mounts: needs root and /dev/fuse. Everything the run leaves — the
# report (report.md, samples.csv, resources.png, faults.txt, soak.log), the
# test's output and on failure the evidence (plugin.log, timelines.txt,
# mountinfo.txt) — is in one directory, named in the last line:
#   soak: PASS|FAIL seed= duration= faults= ops= errors= lost= ... dir=DIR
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
duration=${DURATION:-5m}
seed=${SOAK_SEED:-$(od -An -N7 -tu8 /dev/urandom | tr -d ' ')}
case $seed in '' | *[!0-9]*) echo "soak: SOAK_SEED=$seed: want a decimal number" >&2; exit 2 ;; esac
# Seconds of a Go duration made of h, m and s (1h, 90m, 1h30m, 300s).
secs=$(echo "$duration" | sed -E 's/([0-9]+)h/\1*3600+/; s/([0-9]+)m/\1*60+/; s/([0-9]+)s/\1+/; s/\+$//' | bc 2>/dev/null)
case $secs in '' | *[!0-9]*) echo "soak: DURATION=$duration: want a duration such as 5m, 1h or 1h30m" >&2; exit 2 ;; esac
out=${SOAK_OUTPUT:-_output/soak}
dir=$out/$(date -u +%Y%m%d-%H%M%S)-seed-$seed
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
echo "soak: seed=$seed duration=$duration dir=$dir (replay: make soak DURATION=$duration SOAK_SEED=$seed)"

# The test's own bound: the faults, then up to ~15 minutes of checks.
BASIN_SOAK=$duration SOAK_SEED=$seed BASIN_SOAK_DIR=$dir BASIN_SOAK_SUMMARY=$dir/summary.txt \
  "$GO" test -count=1 -timeout "$((secs + 1200))s" -run '^TestSoak$' -v ./tests/chaos/ >"$dir/test.log" 2>&1 &
test=$!
# The soak's own lines as they come (faults, progress, failures).
tail -n +1 -F "$dir/test.log" 2>/dev/null | grep --line-buffered -E '^soak: |^--- |^(FAIL|ok|panic)' &
follow=$!
wait "$test"
status=$?
sleep 1
kill "$follow" 2>/dev/null
wait "$follow" 2>/dev/null

if [ -f "$dir/summary.txt" ]; then
  line=$(cat "$dir/summary.txt")
else
  line="soak: FAIL seed=$seed duration=$duration (no summary: the test did not finish; see test.log) dir=$dir"
fi
if [ "$status" -ne 0 ] && [[ $line == "soak: PASS"* ]]; then
  line="soak: FAIL (go test exited $status; see test.log) ${line#soak: PASS }"
fi
echo "$line"
[ "$status" -eq 0 ]
