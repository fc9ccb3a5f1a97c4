#!/usr/bin/env bash
# Installs the Debian packages the test cluster needs, if missing (one apt
# command at a time).
set -euo pipefail
need=()
for c in containerd:containerd runc:runc iptables:iptables conntrack:conntrack openssl:openssl curl:curl; do
  command -v "${c%%:*}" >/dev/null || need+=("${c#*:}")
done
[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
[ -x /bin/busybox ] || need+=(busybox-static)
[ ${#need[@]} -eq 0 ] && exit 0
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
as_root apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
