#!/usr/bin/env bash
# Warm sequential read through a Basin mount (FUSE passthrough) compared,
# in the same run, with fio reading the cache's data file directly; the page
# cache is dropped before each read. Needs root, fio and /dev/fuse.
#   bench/fio-passthrough.sh [bin/csi-driver]      SIZE=2G by default
set -euo pipefail
bin=$(realpath "${1:-bin/csi-driver}")
size=${SIZE:-2G}
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
  fio --name=read --filename="$1" --rw=read --bs=1M --ioengine=psync --readonly \
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

direct=$(fio_read "$data")
mount=$(fio_read "$mnt/big.bin")
python3 - "$direct" "$mount" <<'PY'
import sys
d, m = (int(x) for x in sys.argv[1:3])
print(f"cache data file directly: {d/1e6:8.0f} MB/s")
print(f"through the Basin mount:  {m/1e6:8.0f} MB/s")
print(f"ratio mount/direct:       {m/d:8.2f}  (goal >= 0.9)")
PY
grep -q "passthrough enabled" "$work/mount.log" && echo "FUSE passthrough: enabled" || echo "FUSE passthrough: NOT enabled"
