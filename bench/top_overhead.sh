#!/usr/bin/env bash
# What watching a run costs: the MLP under BSP (2 workers, 2 servers) trained
# with and without dl-top attached (refreshing every INTERVAL seconds), in
# alternating pairs so that a noisy machine weighs on both alike. Prints the
# median ms per step of each side and their ratio; writes
# bench/out/top_overhead.json with every pair.
#
#   bench/top_overhead.sh [PAIRS] [STEPS] [INTERVAL]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${SHOAL_BIN:-$root/build}
pairs=${1:-3}
steps=${2:-3000}
interval=${3:-1}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$root/bench/out"

one() {  # one NAME WATCH: trains once; WATCH=yes attaches dl-top
  local dir=$work/$1
  SHOAL_BIN=$bin "$root/scripts/train-local.sh" --run-dir "$dir" --no-eval "$root/configs/fashion-mlp.yaml" \
    cluster.nservers_per_group=2 train.steps="$steps" >/dev/null 2>"$dir.log" &
  local train=$!
  if [[ $2 == yes ]]; then
    until [[ -s "$dir/server-1.log" ]]; do sleep 0.05; done
    "$bin/dl-top" "$dir/plan.json" --json --interval "$interval" >"$dir.top" 2>/dev/null &
  fi
  wait "$train" || { tail -n 5 "$dir.log" >&2; exit 1; }
  wait  # dl-top ends with the job
}
for ((i = 0; i < pairs; i++)); do
  echo "top_overhead: pair $((i + 1)) of $pairs" >&2
  one "alone-$i" no
  one "watched-$i" yes
done

python3 - "$work" "$pairs" "$steps" "$interval" "$root/bench/out/top_overhead.json" <<'PY'
import json, statistics, sys
work, pairs, steps, interval, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
def ms(name):
    return [json.loads(l) for l in open(f"{work}/{name}/worker-0.jsonl") if '"done"' in l][-1]["ms_per_step_median"]
rows = [{"alone_ms": ms(f"alone-{i}"), "watched_ms": ms(f"watched-{i}"),
         "frames": sum(1 for _ in open(f"{work}/watched-{i}.top"))} for i in range(pairs)]
for r in rows:
    r["ratio"] = r["watched_ms"] / r["alone_ms"]
ratios = [r["ratio"] for r in rows]
result = {"bench": "top_overhead", "job": "configs/fashion-mlp.yaml, 2 workers, 2 servers, BSP",
          "steps": steps, "interval_s": interval, "pairs": rows,
          "alone_ms_median": statistics.median(r["alone_ms"] for r in rows),
          "watched_ms_median": statistics.median(r["watched_ms"] for r in rows),
          "ratio_median": statistics.median(ratios), "ratio_range": [min(ratios), max(ratios)]}
json.dump(result, open(out, "w"), indent=2)
print(f"ms/step alone {result['alone_ms_median']:.3f}, with dl-top every {interval:g} s "
      f"{result['watched_ms_median']:.3f}: ratio {result['ratio_median']:.3f} "
      f"(range {min(ratios):.3f}-{max(ratios):.3f}, {pairs} pairs); wrote {out}")
PY
