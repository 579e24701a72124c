#!/usr/bin/env bash
# Runs a job on this machine: shards the data when missing, plans, starts the
# plan's servers and workers on loopback, waits, and prints the outcome.
# If any process fails, every other one it started is stopped.
#
#   scripts/train-local.sh JOB.yaml [section.field=value ...]
#
# Environment: RUN_DIR (default runs/<job>-<time>), BASE_PORT (first server
# port; default picked from the process id), SHOAL_BIN (default build/).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${SHOAL_BIN:-$root/build}
usage() { echo "usage: $0 JOB.yaml [section.field=value ...]" >&2; exit 2; }
[[ $# -ge 1 && -f "$1" ]] || usage
job=$1
shift
sets=()
for o in "$@"; do sets+=(--set "$o"); done

name=$(basename "$job" .yaml)
run_dir=${RUN_DIR:-runs/$name-$(date +%Y%m%d-%H%M%S)}
base_port=${BASE_PORT:-$((20000 + $$ % 20000))}
mkdir -p "$run_dir"
plan=$run_dir/plan.json

"$bin/dl-plan" "$job" "${sets[@]}" --strategy data --base-port "$base_port" -o "$plan"
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))$1)" "$plan"; }
workers=$(field '["cluster"]["workers"]')
servers=$(field '["cluster"]["servers"]')
dataset=$(field '["data"]["dataset"]')
shards=$(field '["data"]["shards"]')
[[ -n "$shards" ]] || shards=runs/shards/$dataset-$workers

if [[ ! -f "$shards/manifest.json" ]]; then
  echo "train-local: sharding $dataset into $shards ($workers shards)" >&2
  "$bin/dl-shard" --dataset "$dataset" --out "$shards" --shards "$workers" >"$run_dir/shard.json"
fi

pids=()
names=()
stop_all() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
}
trap 'stop_all' EXIT
trap 'stop_all; exit 130' INT TERM

for ((i = 0; i < servers; i++)); do
  "$bin/dl-server" --plan "$plan" --id "$i" --checkpoint-dir "$run_dir/ckpt" \
    >"$run_dir/server-$i.jsonl" 2>"$run_dir/server-$i.log" &
  pids+=($!)
  names+=("server $i")
done
for ((w = 0; w < workers; w++)); do
  if ((w == 0)); then
    # Worker 0 reports to us: a live line on a terminal, JSON lines otherwise.
    "$bin/dl-worker" --plan "$plan" --id 0 --shards "$shards" --metrics "$run_dir/worker-0.jsonl" \
      2>"$run_dir/worker-0.log" &
  else
    "$bin/dl-worker" --plan "$plan" --id "$w" --shards "$shards" --no-eval \
      >"$run_dir/worker-$w.jsonl" 2>"$run_dir/worker-$w.log" &
  fi
  pids+=($!)
  names+=("worker $w")
done
echo "train-local: $workers workers, $servers servers, plan $plan, logs in $run_dir" >&2

# Wait for every process; the first failure stops the rest.
remaining=${#pids[@]}
failed=""
while ((remaining > 0)); do
  status=0
  wait -n -p done_pid || status=$?
  remaining=$((remaining - 1))
  if ((status != 0)) && [[ -z "$failed" ]]; then
    for i in "${!pids[@]}"; do [[ "${pids[$i]}" == "$done_pid" ]] && failed=${names[$i]}; done
    log=$run_dir/${failed/ /-}.log
    echo "train-local: $failed failed (exit $status); stopping the others" >&2
    [[ -f "$log" ]] && tail -n 5 "$log" >&2
    stop_all
  fi
done
trap - EXIT
[[ -z "$failed" ]] || exit 1

"$bin/dl-ckpt" verify "$run_dir/ckpt" >"$run_dir/verify.json"
accuracy=$(python3 -c "
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line) if line.startswith('{') else {}
    if r.get('event') == 'done': print(r.get('test_accuracy', ''))" "$run_dir/worker-0.jsonl")
echo "train-local: done: test accuracy $accuracy; checkpoints in $run_dir/ckpt (verified)" >&2
