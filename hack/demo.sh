#!/usr/bin/env bash
# make demo: the main job on an embedded default (a local-directory bucket),
# no cloud account needed. Mounting FUSE needs root (or fuse3's fusermount3).
set -euo pipefail
bin=${1:-bin/csi-driver}
if [ "$(id -u)" != 0 ]; then
  echo "demo: run as root (it mounts FUSE and drops the page cache between passes)" >&2
  exit 1
fi
if [ ! -c /dev/fuse ]; then
  echo "demo: /dev/fuse is missing (apt-get install fuse3; modprobe fuse)" >&2
  exit 1
fi
exec "$bin" demo "${@:2}"
