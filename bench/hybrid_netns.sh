#!/usr/bin/env bash
# Hybrid partitioning on emulated hosts (SINGA §5.3): configs/models/fc-heavy.yaml
# trained by 4 workers on 4 hosts with 1 Gbit/s links (scripts/netns-cluster.sh;
# servers on the head, whose link is not limited) under the all-data, the
# all-model and dl-plan's optimal (hybrid) plan, with train.overlap on and off,
# and by the same 4 workers on 2 hosts (two share each NIC: the profile says
# workers_per_node 2). For each: the measured step time (median over the
# steps, the slowest worker's) beside dl-plan's prediction.
# Writes bench/out/hybrid_netns.json. Needs root.
#
#   bench/hybrid_netns.sh [STEPS]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${SHOAL_BIN:-$root/build}
steps=${1:-15}
# shellcheck source=netns_bench.sh
. "$root/bench/netns_bench.sh" hybrid_netns 4

# The profile, measured as the runs will use the cluster: the four hosts
# calibrate at once (dl-plan calibrate), each against its own echo server on
# the head, so the figures include what they share — this machine's cores,
# which compute for every worker and move every host's packets.
head=$("$root/scripts/netns-cluster.sh" hosts "$cluster" | awk '$1 == "head" {print $2}')
echoes=() peers=()
for i in 1 2 3 4; do
  "$bin/dl-plan" calibrate --serve "tcp://$head:$((11000 + i))" --serve-seconds 120 &
  echoes+=($!)
done
sleep 0.5
for i in 1 2 3 4; do
  "$root/scripts/netns-cluster.sh" exec "$cluster" "$i" "$bin/dl-plan" calibrate --peer "tcp://$head:$((11000 + i))" \
    --seconds 1 --nodes 4 --name netns-4x1gbit -o "$work/calibrated-$i.yaml" &
  peers+=($!)
done
for p in "${peers[@]}"; do wait "$p"; done
kill "${echoes[@]}" 2>/dev/null || true
# The servers run here on the head, whose link is not shaped: its loopback's bandwidth.
"$bin/dl-plan" calibrate --seconds 1 -o "$work/head.yaml"
python3 - "$work/head.yaml" "$work"/calibrated-*.yaml >"$work/profile.yaml" <<'PY'
import sys, yaml
def mean(values):  # numbers averaged, mappings field by field, anything else the first's
    if all(isinstance(v, dict) for v in values):
        return {k: mean([v[k] for v in values if k in v]) for k in values[0]}
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        avg = sum(values) / len(values)
        return round(avg) if all(isinstance(v, int) for v in values) else avg
    return values[0]
head = yaml.safe_load(open(sys.argv[1]))
profile = mean([yaml.safe_load(open(path)) for path in sys.argv[2:]])
profile["server_gbps"] = head["bandwidth_gbps"]
# server_memory_gb_per_s stays the hosts' mean: the servers share this machine's
# cores with the workers, as the hosts did calibrating at once (the head measured alone).
print("# bench/hybrid_netns.sh: the mean of four hosts calibrating at once; servers on the head")
print(yaml.safe_dump(profile, sort_keys=False), end="")
PY
cat "$work/profile.yaml" >&2

# The same four workers two to a host: a second cluster of two hosts.
shared=${cluster:0:7}s
trap '"$root/scripts/netns-cluster.sh" down "$cluster"; "$root/scripts/netns-cluster.sh" down "$shared" 2>/dev/null; rm -rf "$work"' EXIT
"$root/scripts/netns-cluster.sh" up "$shared" 2 1gbit >/dev/null
sed 's/^workers_per_node: .*/workers_per_node: 2/' "$work/profile.yaml" >"$work/shared.yaml"

results=()
# case_logs RUN: every process's last lines, before the EXIT trap removes them.
case_logs() {
  local log
  for log in "$1"/*.log; do
    [[ -f "$log" ]] && printf -- '--- %s:\n%s\n' "${log##*/}" "$(tail -n 5 "$log")" >&2
  done
  return 0
}
# case NAME CLUSTER PROFILE STRATEGY [JOB FIELD=VALUE...]
case_run() {
  local name=$1 on=$2 profile=$3 strategy=$4 run=$work/$1
  shift 4
  echo "hybrid_netns: $name" >&2
  CLUSTER=$on STRATEGY=$strategy PROFILE=$profile EVALUATE=no RUN_DIR=$run SHOAL_BIN=$bin \
    BASE_PORT=$((12000 + RANDOM % 8000)) "$root/scripts/train-local.sh" "$root/configs/models/fc-heavy.yaml" \
    train.steps="$steps" train.display_every="$steps" "$@" 2>"$work/$name.log" ||
    { cat "$work/$name.log" >&2; case_logs "$run"; exit 1; }
  results+=("$name=$run")
}
for strategy in data model optimal; do
  case_run "$strategy" "$cluster" "$work/profile.yaml" "$strategy"
done
case_run data-overlap-off "$cluster" "$work/profile.yaml" data train.overlap=false
case_run optimal-overlap-off "$cluster" "$work/profile.yaml" optimal train.overlap=false
case_run data-shared-nic "$shared" "$work/shared.yaml" data

python3 - "$out/hybrid_netns.json" "$work/profile.yaml" "${results[@]}" <<'PY'
import glob, json, os, sys
out, profile, runs = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3:]
rows = []
for case in runs:
    name, run = case.split("=", 1)
    plan = json.load(open(run + "/plan.json"))
    done = [json.loads(l) for p in glob.glob(run + "/worker-*.jsonl") for l in open(p) if '"event":"done"' in l]
    measured = max(d["ms_per_step_median"] for d in done)
    chosen = plan["planner"]["totals"]["chosen"]
    rows.append({"case": name, "strategy": plan["strategy"], "group_size": chosen["group_size"],
                 "overlap": plan["job"]["train"]["overlap"],
                 "workers_per_node": plan["planner"]["profile"]["workers_per_node"],
                 "choices": {l["name"]: l["choice"] for l in plan["planner"]["layers"]},
                 "measured_ms": measured, "predicted_ms": 1e3 * chosen["seconds"],
                 "prediction_error": 1e3 * chosen["seconds"] / measured - 1,
                 "param_bytes": chosen["param_bytes"], "feature_bytes": chosen["feature_bytes"]})
data = next(r for r in rows if r["case"] == "data")
for r in rows:
    r["speedup_over_all_data"] = data["measured_ms"] / r["measured_ms"]
json.dump({"bench": "hybrid_netns", "model": "configs/models/fc-heavy.yaml", "hosts": 4, "link": "1gbit",
           "profile": profile, "runs": rows}, open(out, "w"), indent=2)
print(f"{'case':20} {'M':>3} {'measured ms':>12} {'predicted ms':>13} {'error':>7} {'vs all-data':>12}")
for r in rows:
    print(f"{r['case']:20} {r['group_size']:>3} {r['measured_ms']:>12.1f} {r['predicted_ms']:>13.1f} "
          f"{100 * r['prediction_error']:>6.1f}% {r['speedup_over_all_data']:>11.2f}x")
print("wrote", out)
PY
