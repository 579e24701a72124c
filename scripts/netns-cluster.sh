#!/usr/bin/env bash
# Emulated hosts on one machine: N network namespaces on a bridge, each link
# limited by tc tbf to RATE (e.g. 1gbit; "none" for no limit).
#
#   scripts/netns-cluster.sh up NAME N [RATE]   prints "host address" per line
#   scripts/netns-cluster.sh hosts NAME         the same, for a cluster that is up
#   scripts/netns-cluster.sh down NAME
#   scripts/netns-cluster.sh exec NAME I CMD... run CMD on host I (1-based)
#
# Hosts are NAME-1..NAME-N with addresses 10.250.S.1..N/24, S derived from
# NAME, on bridge NAME-br. This machine itself is "head", 10.250.S.254 on the
# bridge, its link not limited: where parameter servers go when the hosts'
# links should be the bottleneck (the last line printed). Needs root (ip, tc
# from iproute2). `down` removes exactly what `up` made.
set -euo pipefail
usage() { echo "usage: $0 up NAME N [RATE] | down NAME | exec NAME I CMD..." >&2; exit 2; }
[[ $# -ge 2 ]] || usage
action=$1 name=$2
[[ "$name" =~ ^[a-z][a-z0-9]{0,7}$ ]] || { echo "netns-cluster: NAME must be 1-8 lowercase letters or digits" >&2; exit 2; }
subnet=$(( $(printf '%s' "$name" | cksum | cut -d' ' -f1) % 250 + 1 ))
bridge=$name-br

up() {
  local n=$1 rate=${2:-none}
  ip link add "$bridge" type bridge
  ip addr add "10.250.$subnet.254/24" dev "$bridge"
  ip link set "$bridge" up
  for ((i = 1; i <= n; i++)); do
    local host=$name-$i
    ip netns add "$host"
    ip link add "$host-v" type veth peer name eth0 netns "$host"
    ip link set "$host-v" master "$bridge" up
    ip -n "$host" addr add "10.250.$subnet.$i/24" dev eth0
    ip -n "$host" link set eth0 up
    ip -n "$host" link set lo up
    if [[ "$rate" != none ]]; then
      # Both directions: the host's side shapes what it sends, the bridge side what it receives.
      ip netns exec "$host" tc qdisc add dev eth0 root tbf rate "$rate" burst 256kb latency 50ms
      tc qdisc add dev "$host-v" root tbf rate "$rate" burst 256kb latency 50ms
    fi
  done
  hosts
}

hosts() {
  local host
  for host in $(ip netns list | awk '{print $1}' | grep -E "^$name-[0-9]+$" | sort -t- -k2 -n); do
    echo "$host 10.250.$subnet.${host##*-}"
  done
  ip link show "$bridge" >/dev/null 2>&1 || { echo "netns-cluster: no cluster '$name' is up" >&2; exit 1; }
  echo "head 10.250.$subnet.254"
}

down() {
  local host
  for host in $(ip netns list | awk '{print $1}' | grep -E "^$name-[0-9]+$" || true); do
    ip link del "$host-v" 2>/dev/null || true
    ip netns del "$host"
  done
  ip link del "$bridge" 2>/dev/null || true
}

case $action in
  up) [[ $# -ge 3 ]] || usage; up "$3" "${4:-none}" ;;
  down) down ;;
  hosts) hosts ;;
  exec) [[ $# -ge 4 ]] || usage; host=$name-$3; shift 3; exec ip netns exec "$host" "$@" ;;
  *) usage ;;
esac
