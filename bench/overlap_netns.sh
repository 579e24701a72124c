#!/usr/bin/env bash
# Overlap of communication with backprop (train.overlap, SINGA §5.3) where
# the links, not the cores, bound a step: the CNN, BSP, 2 workers x 32 on 2
# emulated hosts with 1 Gbit/s links (scripts/netns-cluster.sh; the server on
# the head), with overlap on and off in turn, ROUNDS times each. Each figure
# is a run's median ms per step (the slower worker's). Writes
# bench/out/overlap_netns.json. Needs root.
#
#   bench/overlap_netns.sh [STEPS] [ROUNDS]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${SHOAL_BIN:-$root/build}
steps=${1:-60}
rounds=${2:-2}
# shellcheck source=netns_bench.sh
. "$root/bench/netns_bench.sh" overlap_netns 2
shards=$bin/bench-shards/fashion-mnist-2
[[ -f $shards/manifest.json ]] || "$bin/dl-shard" --dataset fashion-mnist --out "$shards" --shards 2 >/dev/null

runs=()
for ((r = 0; r < rounds; r++)); do
  for overlap in true false; do
    run=$work/$overlap-$r
    echo "overlap_netns: overlap $overlap, round $((r + 1)) of $rounds" >&2
    CLUSTER=$cluster EVALUATE=no RUN_DIR=$run SHOAL_BIN=$bin BASE_PORT=$((12000 + RANDOM % 8000)) \
      "$root/scripts/train-local.sh" "$root/configs/fashion-cnn.yaml" train.steps="$steps" \
      train.display_every="$steps" train.overlap=$overlap data.shards="$shards" >"$run.log" 2>&1 ||
      { cat "$run.log" >&2; exit 1; }
    runs+=("$overlap:$run")
  done
done

python3 - "$out/overlap_netns.json" "$steps" "${runs[@]}" <<'PY'
import glob, json, statistics, sys
out, steps, runs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
ms = {"true": [], "false": []}
for entry in runs:
    overlap, run = entry.split(":", 1)
    done = [json.loads(l) for p in glob.glob(run + "/worker-*.jsonl") for l in open(p) if '"event":"done"' in l]
    ms[overlap].append(max(d["ms_per_step_median"] for d in done))
on, off = statistics.median(ms["true"]), statistics.median(ms["false"])
json.dump({"bench": "overlap_netns", "model": "configs/fashion-cnn.yaml", "consistency": "bsp", "workers": 2,
           "batch": 32, "hosts": 2, "link": "1gbit", "steps": steps, "overlap_on_ms": ms["true"],
           "overlap_off_ms": ms["false"], "on_over_off": on / off}, open(out, "w"), indent=2)
print(f"overlap on : {' '.join(f'{x:.1f}' for x in ms['true'])} ms per step")
print(f"overlap off: {' '.join(f'{x:.1f}' for x in ms['false'])} ms per step")
print(f"on / off (medians): {on / off:.2f}")
print("wrote", out)
PY
