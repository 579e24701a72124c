#!/usr/bin/env bash
# A worker evaluating for longer than cluster.timeout_ms is busy, not gone:
# it tells its servers so (keepalives), the other worker's requests waiting
# on it are answered "busy" and asked again, and the BSP run goes on without
# a timeout or a restart. Worker 0 evaluates 30,000 validation records of
# the CNN every 20 steps, several timeouts' worth.
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
