#!/usr/bin/env bash
# Times dl-plan on generated nets and writes bench/out/plan_speed.json:
# - the exact search: a 200-layer net (chains of fully connected + relu with a
#   two-branch block every 10 layers) for 64 workers on the 100 Gbit/s
#   profile; the search's own time is the optimal plan's wall time less
#   --strategy data's (which builds the same net and plan without searching);
# - writing big plans: a 1000-layer chain (fully connected 256 + relu) on one
#   group of 1000 workers, with every strategy (--strategy model cuts every
#   weight at each rank's rows: a quarter of a million slices).
# Each figure is the best of 5 runs.
# Usage: bench/plan_speed.sh [BUILD_DIR]   (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:-$root/build}" && pwd)
out=$root/bench/out
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 - "$tmp" <<'PY'
import sys
def write(path, name, lines, batch, workers):
    open(path, "w").write(f"name: {name}\nmodel:\n  layers:\n" + "\n".join(lines) +
                          f"\ntrain: {{batch_size: {batch}}}\ncluster: {{nworkers_per_group: {workers}}}\n")

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
write(sys.argv[1] + "/net200.yaml", "net200", lines, 4, 64)

lines, src = ["    - {name: data, type: data, shape: [64]}"], "data"
for i in range(499):
    lines += [f"    - {{name: fc{i}, type: fully_connected, srclayers: {src}, num_output: 256}}",
              f"    - {{name: r{i}, type: relu, srclayers: fc{i}}}"]
    src = f"r{i}"
lines += [f"    - {{name: logits, type: fully_connected, srclayers: {src}, num_output: 10}}",
          "    - {name: loss, type: softmax_loss, srclayers: [logits, data]}"]
write(sys.argv[1] + "/net1000.yaml", "net1000", lines, 2, 1000)
PY

python3 - "$bin/dl-plan" "$tmp" "$root/configs/clusters/100gbe-64node.yaml" "$out/plan_speed.json" "$root" <<'PY'
import json, os, resource, subprocess, sys, time
dl_plan, tmp, cluster, out, root = sys.argv[1:]
def best_of(args, runs=5):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([dl_plan] + args + ["-o", tmp + "/plan.json"], check=True)
        times.append(time.perf_counter() - t)
    return min(times)
net200 = [tmp + "/net200.yaml", "--cluster", cluster, "--workers", "64"]
optimal, data = best_of(net200 + ["--strategy", "optimal"]), best_of(net200 + ["--strategy", "data"])
plan = json.loads(subprocess.run([dl_plan] + net200, check=True, capture_output=True, text=True).stdout)
big = {}
for strategy in ("data", "optimal", "model"):
    seconds = best_of([tmp + "/net1000.yaml", "--strategy", strategy])
    written = json.load(open(tmp + "/plan.json"))
    big[strategy] = {"seconds": seconds, "plan_bytes": os.path.getsize(tmp + "/plan.json"),
                     "slices": len(written["slices"])}
commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                        capture_output=True, text=True).stdout.strip() or "unknown"
record = {"bench": "plan_speed", "commit": commit, "layers": len(plan["layers"]), "workers": 64,
          "group_sizes_searched": len(plan["planner"]["group_sizes"]), "max_states": plan["planner"]["max_states"],
          "dl_plan_seconds": optimal, "dl_plan_data_only_seconds": data,
          "search_seconds": max(optimal - data, 0.0),
          "net1000_on_1000_workers": big,
          "peak_rss_mb_largest": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}
json.dump(record, open(out, "w"), indent=2)
print(json.dumps(record))
PY
