#!/usr/bin/env bash
# Synchronous training is single-node SGD (SINGA §5.2.1): BSP with 2 workers ×
# batch 32 ends k steps with the same parameters as 1 worker × batch 64 on the
# same records, to 1e-4 relative. dl-shard deals records like cards, so the
# two shards' first 32·k records are the one shard's first 64·k. The same
# holds for an RBM trained by contrastive divergence: its Gibbs samples are
# keyed by the record and the step (lib/ops/rbm.h), not by the worker.
. "$(dirname "$0")/lib.sh"

job=$root/configs/fashion-mlp.yaml
steps=40
run() {  # run NAME WORKERS BATCH SHARDS [OVERRIDE...]: trains $job for $steps steps
  local dir=$tmp/$1 workers=$2 batch=$3 shards=$4 port
  shift 4
  local sets=()
  for o in "$@"; do sets+=(--set "$o"); done
  port=$(fresh_port)
  mkdir -p "$dir"
  "$bin/dl-plan" "$job" --strategy data --base-port "$port" -o "$dir/plan.json" "${sets[@]}" \
    --set cluster.nworkers_per_group="$workers" --set train.batch_size="$batch" --set train.steps="$steps"
  "$bin/dl-server" --plan "$dir/plan.json" --checkpoint-dir "$dir/ckpt" >"$dir/server.jsonl" 2>"$dir/server.log" &
  local server=$! pids=()
  for ((w = 0; w < workers; w++)); do
    "$bin/dl-worker" --plan "$dir/plan.json" --id "$w" --shards "$shards" --no-eval >"$dir/w$w.jsonl" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || fail "a worker of the $workers-worker run failed"; done
  wait "$server" || fail "the server of the $workers-worker run failed: $(cat "$dir/server.log")"
}

max_rel() { "$bin/dl-ckpt" diff "$(final_ckpt "$tmp/$1")" "$(final_ckpt "$tmp/$2")" | python3 -c 'import json,sys; print(json.load(sys.stdin)["max_rel"])'; }

# same_params A B WHAT ASSERTION: runs A and B both end at step $steps with the
# same tensors, equal to 1e-4 relative; ASSERTION (Python) checks the diff `d`
# further: which tensors it holds.
same_params() {
  "$bin/dl-ckpt" diff "$(final_ckpt "$tmp/$1")" "$(final_ckpt "$tmp/$2")" >"$tmp/$2-diff.json"
  python3 - "$tmp/$2-diff.json" "$4" "$steps" <<'PY' || fail "$3 differ: $(cat "$tmp/$2-diff.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["step_a"] == d["step_b"] == int(sys.argv[3]), d
assert not d["only_in_a"] and not d["only_in_b"], d
exec(sys.argv[2])
assert d["max_rel"] <= 1e-4, d["max_rel"]
print("max relative difference", d["max_rel"])
PY
}

run two 2 32 "$(shards_for 2)"
run one 1 64 "$(shards_for 1)"
# 3 layers x (weight, bias) x (value, velocity)
same_params one two parameters 'assert len(d["tensors"]) == 12, d'
ok "BSP 2 workers x 32 = 1 worker x 64 after 40 steps (max relative difference <= 1e-4)"

# The comparison can fail: the same run with another learning rate, or with
# the two workers' batches not adding up to the one worker's, differs.
run other-lr 1 64 "$(shards_for 1)" train.learning_rate=0.051
run other-batch 2 16 "$(shards_for 2)"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 1e-3 and float(sys.argv[2]) > 1e-3 else 1)" \
  "$(max_rel one other-lr)" "$(max_rel one other-batch)" || fail "the comparison cannot tell runs apart"
ok "a different learning rate or batch split is told apart (max relative difference > 1e-3)"

# The RBM (the bottom one of configs/fashion-rbm1.yaml, with 64 hidden units).
job=$tmp/rbm.yaml
sed 's/num_output: 1000/num_output: 64/' "$root/configs/fashion-rbm1.yaml" >"$job"
run rbm-two 2 32 "$(shards_for 2)"
run rbm-one 1 64 "$(shards_for 1)"
# weight, bias, visible_bias x (value, velocity)
same_params rbm-one rbm-two "RBM parameters" 'assert len(d["tensors"]) == 6, d'
run rbm-other-seed 1 64 "$(shards_for 1)" train.seed=2
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 1e-3 else 1)" "$(max_rel rbm-one rbm-other-seed)" ||
  fail "the RBM comparison cannot tell runs apart"
ok "RBM by CD-1: BSP 2 workers x 32 = 1 worker x 64 after 40 steps; another train.seed (other draws and initial values) differs"

# Batch norm synchronised over the workers (sync: true) keeps the equivalence:
# the two workers' statistics are those of the one worker's batch of 64. (A
# bias right before a batch norm would get no gradient but rounding's.)
# Per-worker statistics (sync: false) normalise by each half and differ.
# Over 5 steps, not 40: the two runs sum the statistics in different orders,
# so they may differ in their last bit. A value that this moves across the
# ReLU's 0 takes a gradient the other run's does not, and momentum spreads it;
# on some CPUs that comes within 40 steps. After 5 steps per-worker
# statistics are still told apart from the group's by far.
steps=5
job=$tmp/bn.yaml
cat >"$job" <<'YAML'
name: bn-cnn
model:
  layers:
    - {name: data, type: data, shape: [1, 28, 28]}
    - {name: conv1, type: convolution, srclayers: data, num_output: 8, kernel: 5, stride: 2, bias: false}
    - {name: bn1, type: batch_norm, srclayers: conv1, sync: true}
    - {name: relu1, type: relu, srclayers: bn1}
    - {name: fc1, type: fully_connected, srclayers: relu1, num_output: 32}
    - {name: relu2, type: relu, srclayers: fc1}
    - {name: bn2, type: batch_norm, srclayers: relu2, sync: true}
    - {name: fc2, type: fully_connected, srclayers: bn2, num_output: 10}
    - {name: loss, type: softmax_loss, srclayers: [fc2, data]}
train: {batch_size: 32, updater: momentum, learning_rate: 0.05, momentum: 0.9}
cluster: {nworker_groups: 1, nworkers_per_group: 2, consistency: bsp}
data: {dataset: fashion-mnist}
YAML
run bn-two 2 32 "$(shards_for 2)"
run bn-one 1 64 "$(shards_for 1)"
same_params bn-one bn-two "sync batch norm parameters" \
  'assert {"bn1.running_mean", "bn2.running_var"} <= {t["name"] for t in d["tensors"]}, d["tensors"]'
sed -i 's/sync: true/sync: false/' "$job"
run bn-per-worker 2 32 "$(shards_for 2)"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 1e-3 else 1)" "$(max_rel bn-one bn-per-worker)" ||
  fail "per-worker batch norm statistics are not told apart from the group's"
ok "batch norm with sync: BSP 2 workers x 32 = 1 worker x 64 after $steps steps; per-worker statistics differ"

# kill -9 of a worker mid-run with synchronised batch norm: its peer cannot
# take a restarted worker back mid-step, so the supervisor restarts every
# process from the newest complete checkpoint set, and the run ends bit for bit.
sed -i 's/sync: false/sync: true/' "$job"
supervised() {  # supervised NAME: 200 steps under train-local.sh, in the background
  SHOAL_BIN=$bin RUN_DIR=$tmp/$1 BASE_PORT=$(fresh_port) "$root/scripts/train-local.sh" "$job" \
    train.steps=200 train.checkpoint_every=20 train.eval_every=0 cluster.timeout_ms=4000 \
    data.shards="$(shards_for 2)" >"$tmp/$1.out" 2>"$tmp/$1.err" &
}
supervised bn-calm
wait $! || fail "the synchronised batch norm run failed: $(cat "$tmp/bn-calm.err")"
supervised bn-killed
runner=$!
kill_worker_at "$tmp/bn-killed" 100 1
wait "$runner" || fail "the run did not survive a worker's death: $(cat "$tmp/bn-killed.err")"
grep -q "worker 1 died (exit 137); the other workers exchange with it inside every step; restarting every server" \
  "$tmp/bn-killed.err" || fail "no restart of every process logged: $(cat "$tmp/bn-killed.err")"
same_bits "$tmp/bn-calm" "$tmp/bn-killed" 200
ok "kill -9 of a worker with synchronised batch norm at step ~100: every process restarts, the run ends bit for bit"

# A stalled worker (SIGSTOP): every process restarts and the run ends bit
# for bit. Worker 0 gives up on it after the timeout, naming it, and the
# supervisor blames worker 1. Where the server's own timeout (no request from
# any worker) ends it first, worker 0 gives up on the server instead, and the
# line blames server 0: which comes first depends on where the stop landed.
supervised bn-stalled
runner=$!
kill_worker_at "$tmp/bn-stalled" 100 1 STOP
wait "$runner" || fail "the run did not survive a stalled worker: $(cat "$tmp/bn-stalled.err")"
grep -Eq "(worker 1 stopped answering|server 0 (died|stopped answering)) \(worker 0 gave up on it: exit 3" \
  "$tmp/bn-stalled.err" || fail "no restart of every process blamed on worker 1 or server 0: $(cat "$tmp/bn-stalled.err")"
same_bits "$tmp/bn-calm" "$tmp/bn-stalled" 200
ok "a stalled worker with synchronised batch norm: every process restarts, the run ends bit for bit"
