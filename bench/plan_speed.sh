#!/usr/bin/env bash
# Times dl-plan's exact search on a generated 200-layer net (chains of fully
# connected + relu with a two-branch block every 10 layers) for 64 workers on
# the 1 Gbit/s profile, and writes bench/out/plan_speed.json.
# The search's own time is the optimal plan's wall time less --strategy data's
# (which builds the same net and plan without searching).
# Usage: bench/plan_speed.sh [BUILD_DIR]   (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:-$root/build}" && pwd)
out=$root/bench/out
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 - "$tmp/net200.yaml" <<'PY'
import sys
lines = ["    - {name: data, type: data, shape: [256]}"]
src, n = "data", 1
while n < 198:
    if n % 10 == 0:  # a branch: two paths joined by concat
        lines += [f"    - {{name: a{n}, type: fully_connected, srclayers: {src}, num_output: 128}}",
                  f"    - {{name: b{n}, type: fully_connected, srclayers: {src}, num_output: 128}}",
                  f"    - {{name: j{n}, type: concat, srclayers: [a{n}, b{n}]}}"]
        src, n = f"j{n}", n + 3
    else:
        lines += [f"    - {{name: fc{n}, type: fully_connected, srclayers: {src}, num_output: 256}}",
                  f"    - {{name: r{n}, type: relu, srclayers: fc{n}}}"]
        src, n = f"r{n}", n + 2
lines += [f"    - {{name: logits, type: fully_connected, srclayers: {src}, num_output: 10}}",
          "    - {name: loss, type: softmax_loss, srclayers: [logits, data]}"]
open(sys.argv[1], "w").write("name: net200\nmodel:\n  layers:\n" + "\n".join(lines) +
                             "\ntrain: {batch_size: 4}\ncluster: {nworkers_per_group: 64}\n")
print(len(lines), "layers", file=sys.stderr)
PY

python3 - "$bin/dl-plan" "$tmp/net200.yaml" "$root/configs/clusters/100gbe-64node.yaml" "$out/plan_speed.json" <<'PY'
import json, subprocess, sys, time
dl_plan, job, cluster, out = sys.argv[1:]
def best_of(strategy, runs=5):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([dl_plan, job, "--cluster", cluster, "--workers", "64", "--strategy", strategy,
                        "-o", "/dev/null"], check=True)
        times.append(time.perf_counter() - t)
    return min(times)
optimal, data = best_of("optimal"), best_of("data")
plan = json.loads(subprocess.run([dl_plan, job, "--cluster", cluster, "--workers", "64"], check=True,
                                 capture_output=True, text=True).stdout)
commit = subprocess.run(["git", "-C", sys.argv[0] and ".", "rev-parse", "--short", "HEAD"],
                        capture_output=True, text=True).stdout.strip() or "unknown"
record = {"bench": "plan_speed", "commit": commit, "layers": len(plan["layers"]), "workers": 64,
          "group_sizes_searched": len(plan["planner"]["group_sizes"]), "max_states": plan["planner"]["max_states"],
          "dl_plan_seconds": optimal, "dl_plan_data_only_seconds": data,
          "search_seconds": max(optimal - data, 0.0)}
json.dump(record, open(out, "w"), indent=2)
print(json.dumps(record))
PY
