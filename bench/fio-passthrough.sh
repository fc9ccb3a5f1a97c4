#!/usr/bin/env bash
# Warm sequential read through a Basin mount (FUSE passthrough) compared,
# in the same run, with fio reading the cache's data file directly; the page
# cache is dropped before each read, and the two alternate. Needs root, fio
# and /dev/fuse.
#   bench/fio-passthrough.sh [bin/csi-driver]      SIZE=2G, ROUNDS=7, FADVISE=0 by default
#
# This machine's disk is a virtual one whose host caches it, so a single
# read after drop_caches varies by ±40 %; the pairs swap their order every
# round and the report gives the median and the geometric mean of the pair
# ratios.
#
# FADVISE=1 lets fio posix_fadvise(SEQUENTIAL) both files (its own
# default); a FUSE file does not pass the hint on to the file the kernel
# reads in passthrough mode.
set -euo pipefail
bin=$(realpath "${1:-bin/csi-driver}")
size=${SIZE:-2G}
fadvise=${FADVISE:-0}
work=$(mktemp -d /var/tmp/basin-fio-XXXXXX)
bucket=$work/bucket cache=$work/cache mnt=$work/mnt
mkdir -p "$bucket" "$mnt"
pid=
cleanup() {
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  mountpoint -q "$mnt" && umount -l "$mnt" || true
  rm -rf "$work"
}
trap cleanup EXIT

fio_read() { # file -> bytes/s
  sync; echo 3 > /proc/sys/vm/drop_caches
  fio --name=read --filename="$1" --rw=read --bs=1M --ioengine=psync --readonly --fadvise_hint="$fadvise" \
      --output-format=json | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["read"]["bw_bytes"])'
}

echo "writing a $size object into a local-directory bucket"
fio --name=gen --filename="$bucket/big.bin" --size="$size" --rw=write --bs=1M \
    --refill_buffers --output-format=terse >/dev/null
"$bin" mount --cache-dir "$cache" --cache-size 16Gi --metadata-ttl=-1 "file://$bucket" "$mnt" 2>"$work/mount.log" &
pid=$!
for _ in $(seq 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
mountpoint -q "$mnt" || { cat "$work/mount.log"; exit 1; }

echo "first read (fills the cache)"
cat "$mnt/big.bin" >/dev/null
# Reopen after the first handle is released so the next open sees a fully
# cached object and goes through passthrough.
sleep 1
data=$(find "$cache/data" -type f -size +1M -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2)
[ -n "$data" ] || { echo "no cache data file found"; exit 1; }

# The disk may still be writing back the cache fill: one read of the data
# file first, not counted; then alternating pairs, so both sides see the
# same machine (ROUNDS pairs, 7 by default), the first of a pair being the
# data file in odd rounds and the mount in even ones.
fio_read "$data" >/dev/null
results=()
for i in $(seq "${ROUNDS:-7}"); do
  if (( i % 2 )); then
    d=$(fio_read "$data"); m=$(fio_read "$mnt/big.bin")
  else
    m=$(fio_read "$mnt/big.bin"); d=$(fio_read "$data")
  fi
  results+=("$d" "$m")
done
python3 - "${results[@]}" <<'PY'
import statistics, sys
v = [int(x) for x in sys.argv[1:]]
d, m = v[0::2], v[1::2]
ratios = sorted(b / a for a, b in zip(d, m))
print(f"cache data file directly: {statistics.median(d)/1e6:8.0f} MB/s (median of {len(d)})")
print(f"through the Basin mount:  {statistics.median(m)/1e6:8.0f} MB/s (median of {len(m)})")
print("pair ratios:              " + " ".join(f"{r:.2f}" for r in ratios))
print(f"ratio mount/direct:       {statistics.median(ratios):8.2f}  (median of the pairs; goal >= 0.9)")
print(f"geometric mean:           {statistics.geometric_mean(ratios):8.2f}")
PY
grep -q "passthrough enabled" "$work/mount.log" && echo "FUSE passthrough: enabled" || echo "FUSE passthrough: NOT enabled"
