#!/usr/bin/env bash
# make bench: shoal against the PyTorch peers, in one run on this machine.
# Writes bench/out/bench.json and prints a table of ratios (shoal ÷ peer; < 1 is faster).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/install-deps.sh"
mkdir -p "$root/bench/out"
exec python3 "$root/bench/compare_peers.py" --root "$root" --bin "${SHOAL_BIN:-$root/build}" \
  --out "$root/bench/out/bench.json" "$@"
