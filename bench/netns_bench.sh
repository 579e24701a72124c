# shellcheck shell=bash
# Shared by the benchmarks on emulated hosts (hybrid_netns.sh, overlap_netns.sh):
# sourced as `. netns_bench.sh NAME HOSTS` after `root` is set. Checks for
# root, gives $out (bench/out) and $work (removed at exit), and brings up
# NAME's cluster of HOSTS hosts with 1 Gbit/s links as $cluster (taken down at exit).
: "${root:?netns_bench.sh is sourced after root is set}"
((EUID == 0)) || { echo "$1: needs root (network namespaces)" >&2; exit 2; }
out=$root/bench/out
work=$(mktemp -d)
cluster=${1:0:3}$$
cluster=${cluster:0:8}
trap '"$root/scripts/netns-cluster.sh" down "$cluster"; rm -rf "$work"' EXIT
mkdir -p "$out"
"$root/scripts/netns-cluster.sh" up "$cluster" "$2" 1gbit >/dev/null
