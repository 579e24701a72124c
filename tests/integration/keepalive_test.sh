#!/usr/bin/env bash
# A worker evaluating for longer than cluster.timeout_ms is busy, not gone:
# it tells its servers so (keepalives), the other worker's requests waiting
# on it are answered "busy" and asked again, and the BSP run goes on without
# a timeout or a restart. Worker 0 evaluates 30,000 validation records of
# the CNN every 20 steps, several timeouts' worth. Steps longer than the
# timeout (dl-worker --slow-ms) are told the same way, and the BSP run ends
# as the one at full speed, bit for bit.
. "$(dirname "$0")/lib.sh"

shards=$tmp/shards
"$bin/dl-shard" --dataset fashion-mnist --out "$shards" --shards 2 --val-fraction 0.5 >/dev/null ||
  fail "dl-shard --val-fraction failed"
RUN_DIR=$tmp/run SHOAL_BIN="$bin" "$root/scripts/train-local.sh" "$root/configs/fashion-cnn.yaml" \
  cluster.nworkers_per_group=2 cluster.timeout_ms=1000 train.steps=40 train.eval_every=20 \
  train.display_every=10 data.shards="$shards" >"$tmp/out" 2>"$tmp/err" ||
  fail "the run with long evaluations failed: $(cat "$tmp/err") $(run_logs "$tmp/run")"
! grep -qi "restart\|gave up\|timed out" "$tmp/err" "$tmp/run/worker-1.log" ||
  fail "a long evaluation was taken for a failure: $(cat "$tmp/err") $(run_logs "$tmp/run")"
grep -q "says worker 0 is busy: evaluating step 20 on 30000 validation records" "$tmp/run/worker-1.log" ||
  fail "worker 1 did not hear that worker 0 was busy: $(run_logs "$tmp/run")"
busy=$(jq -s 'map(select(.event == "server_done"))[0].reads_busy' "$tmp/run/server-0.jsonl")
((busy > 0)) || fail "server 0 answered no read 'busy': $(tail -1 "$tmp/run/server-0.jsonl")"
[[ $(jq -s 'map(select(.event == "eval" and .val_accuracy != null)) | length' "$tmp/run/worker-0.jsonl") == 1 ]] ||
  fail "worker 0 did not record its evaluation of step 20: $(grep eval "$tmp/run/worker-0.jsonl")"
ok "evaluations longer than the timeout keep the run alive ($busy reads answered busy)"

# long_steps NAME SLOW_MS: a BSP MLP run of 6 steps, worker 1 sleeping SLOW_MS
# inside each step's passes, timeout 1 s; its servers' checkpoints in NAME/ckpt.
long_steps() {
  local dir=$tmp/$1 w pids=()
  mkdir -p "$dir"
  "$bin/dl-plan" "$root/configs/fashion-mlp.yaml" --strategy data --base-port "$(fresh_port)" -o "$dir/plan.json" \
    --set cluster.timeout_ms=1000 --set train.steps=6 >/dev/null || fail "dl-plan failed"
  "$bin/dl-server" --plan "$dir/plan.json" --checkpoint-dir "$dir/ckpt" >"$dir/server.jsonl" 2>"$dir/server.log" &
  pids+=($!)
  for w in 0 1; do
    "$bin/dl-worker" --plan "$dir/plan.json" --id $w --shards "$(shards_for 2)" --no-eval \
      --slow-ms $((w == 1 ? $2 : 0)) >"$dir/w$w.jsonl" 2>"$dir/w$w.log" &
    pids+=($!)
  done
  for w in "${pids[@]}"; do
    wait "$w" || fail "$1: a process failed: $(tail -n 3 "$dir"/*.log)"
  done
}
long_steps quick 0
long_steps slow 1600
grep -q "says worker 1 is busy: computing step" "$tmp/slow/w0.log" ||
  fail "worker 0 did not hear that worker 1 was busy computing: $(tail -n 5 "$tmp/slow/w0.log")"
same_bits "$tmp/quick" "$tmp/slow" 6
ok "steps of 1.6 s under a 1 s timeout are told as busy, and the run ends bit for bit as at full speed"
