#!/usr/bin/env bash
# scripts/train-local.sh: a whole BSP run ends with its outcome, and when one
# process fails, every other process it started is stopped.
. "$(dirname "$0")/lib.sh"

run=$tmp/run
SHOAL_BIN=$bin RUN_DIR=$run BASE_PORT=$(fresh_port) "$root/scripts/train-local.sh" \
  "$root/configs/fashion-mlp.yaml" train.steps=100 train.display_every=25 data.shards="$(shards_for 2)" \
  >"$tmp/out" 2>"$tmp/err" || fail "train-local failed: $(cat "$tmp/err")"
grep -qE "train-local: done: test accuracy 0\.[0-9]+; checkpoints in $run/ckpt \(verified\)" "$tmp/err" ||
  fail "no outcome line: $(cat "$tmp/err")"
[[ $(grep -c '"event":"step"' "$tmp/out") -eq 4 ]] || fail "expected 4 progress records: $(cat "$tmp/out")"
ok "a BSP run prints its progress as JSON lines and its outcome"

# run.json records the shards the workers read: where the run dealt them
# itself, dl-worker --eval-only of its checkpoints finds them there.
[[ $(jq -r .shards "$run/run.json") == "$(shards_for 2)" ]] || fail "run.json's shards: $(jq .shards "$run/run.json")"
(cd "$tmp" && SHOAL_BIN=$bin RUN_DIR=$tmp/dealt BASE_PORT=$(fresh_port) "$root/scripts/train-local.sh" --no-eval \
  "$root/configs/fashion-mlp.yaml" train.steps=20 >/dev/null 2>"$tmp/dealt.err") ||
  fail "a run that deals its own shards failed: $(cat "$tmp/dealt.err")"
dealt=$(jq -r .shards "$tmp/dealt/run.json")
[[ $dealt == "$tmp"/runs/shards/* && -f $dealt/manifest.json ]] || fail "run.json's shards: '$dealt'"
"$bin/dl-worker" --plan "$tmp/dealt/plan.json" --eval-only "$tmp/dealt/ckpt" >"$tmp/eval.json" 2>"$tmp/eval.err" ||
  fail "--eval-only without --shards: $(cat "$tmp/eval.err")"
jq -e '.test_accuracy > 0.1' "$tmp/eval.json" >/dev/null || fail "no accuracy: $(cat "$tmp/eval.json")"
grep -q "reading the shards '$tmp/dealt/run.json' records: $dealt" "$tmp/eval.err" ||
  fail "dl-worker does not say where its shards came from: $(cat "$tmp/eval.err")"
ok "run.json records the shards; --eval-only of a run that dealt its own finds them there"

# Its directory is its own: another run is refused it, and what the first left stays.
record=$(sha256sum "$run/run.json")
SHOAL_BIN=$bin expect_failure 2 "run directory '$run' holds another run \(plan [0-9a-f]+\): go on with it with --resume" \
  "$root/scripts/train-local.sh" --run-dir "$run" "$root/configs/fashion-mlp.yaml" train.steps=10
[[ "$(sha256sum "$run/run.json")" == "$record" ]] || fail "the refused run changed the first run's run.json"
ok "a run directory that holds a run is refused to another, its run left as it was"

# Worker 1 reads a corrupted shard (within its first epoch, whose batches come
# in an order of train.seed's): it fails, and the script stops the server
# and worker 0 (which would otherwise wait for worker 1 until the timeout).
cp -r "$(shards_for 2)" "$tmp/shards"
printf '\xff' | dd of="$tmp/shards/train-00001.shard" bs=1 seek=$((44 + 3 * 792)) conv=notrunc status=none
rehash_manifest "$tmp/shards" train-00001.shard
start=$(date +%s)
rc=0
SHOAL_BIN=$bin RUN_DIR=$tmp/bad BASE_PORT=$(fresh_port) "$root/scripts/train-local.sh" \
  "$root/configs/fashion-mlp.yaml" train.epochs=1 data.shards="$tmp/shards" >"$tmp/out" 2>"$tmp/err" || rc=$?
[[ $rc -eq 1 ]] || fail "train-local exited $rc with a failing worker, want 1"
grep -q "train-local: worker 1 failed" "$tmp/err" || fail "the failure is not named: $(cat "$tmp/err")"
grep -q "record 3: checksum mismatch" "$tmp/err" || fail "the worker's reason is not shown: $(cat "$tmp/err")"
(($(date +%s) - start < 30)) || fail "the others were not stopped (took $(($(date +%s) - start)) s; the timeout is 60 s): \
$(cat "$tmp/err"; cat "$tmp/bad/processes.jsonl"; tail -n 3 "$tmp"/bad/*.log)"
! pgrep -f "$tmp/bad/plan.json" >/dev/null || fail "processes of the failed run are still running"
ok "a failing worker stops the whole run, named with its reason"

# A port registry that cannot be used (its directory missing, or full) is named, not a traceback.
SHOAL_BIN=$bin XDG_RUNTIME_DIR=$tmp/nowhere expect_failure 1 "cannot use the port registry '$tmp/nowhere/shoal-ports': No such file" \
  "$root/scripts/train-local.sh" --run-dir "$tmp/noports" "$root/configs/fashion-mlp.yaml" train.steps=10
! grep -q Traceback "$tmp/err" || fail "a traceback: $(cat "$tmp/err")"
ok "an unusable port registry stops the run with its path and reason"
