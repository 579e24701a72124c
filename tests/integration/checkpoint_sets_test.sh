#!/usr/bin/env bash
# Checkpoints as sets of every server's file at a step: pruning keeps the
# newest by step whatever the files' times say, a killed write's temporary
# file is swept when its server starts again, and dl-ckpt verify of a
# directory reads every file and says which sets are complete, exit 1 when
# the newest is not.
. "$(dirname "$0")/lib.sh"

run=$tmp/run
mkdir -p "$run/ckpt"
# What a server killed in the middle of a write leaves behind.
head -c 4096 /dev/urandom >"$run/ckpt/server-1-step-0000000999.ckpt.tmp.Ab12Cd"
SHOAL_BIN=$bin RUN_DIR=$run "$root/scripts/train-local.sh" --no-eval "$root/configs/fashion-mlp.yaml" \
  cluster.nservers_per_group=2 train.steps=600 train.checkpoint_every=50 train.display_every=10 \
  data.shards="$(shards_for 2)" >/dev/null 2>"$tmp/train.err" &
runner=$!
# Once both servers have written step 150, the clock "steps" an hour ahead for those files.
for _ in $(seq 300); do
  [[ -f "$run/ckpt/server-0-step-0000000150.ckpt" && -f "$run/ckpt/server-1-step-0000000150.ckpt" ]] && break
  sleep 0.05
done
touch -d '+1 hour' "$run"/ckpt/server-*-step-*.ckpt
wait "$runner" || fail "the run failed: $(tail -n 5 "$tmp/train.err")"
# Each server keeps its newest three steps, and its file of the newest step
# every server had written when it last pruned: a server whose writes lag (a
# loaded machine) may leave the other one older file, never a stamped one.
for s in 0 1; do
  got=$(cd "$run/ckpt" && printf '%s ' server-"$s"-step-*.ckpt)
  newest="server-$s-step-0000000500.ckpt server-$s-step-0000000550.ckpt server-$s-step-0000000600.ckpt "
  [[ "$got" == "$newest" || "$got" =~ ^server-$s-step-0000000(2|3|4)[05]0\.ckpt\ $newest$ ]] ||
    fail "server $s kept $got, want the newest three by step (and at most one older, not stamped)"
done
ok "pruning keeps the newest three steps although older files were stamped an hour ahead"

[[ ! -e "$run/ckpt/server-1-step-0000000999.ckpt.tmp.Ab12Cd" ]] || fail "the dead write's temporary file is still there"
grep -q "removed '.*server-1-step-0000000999.ckpt.tmp.Ab12Cd', a checkpoint write that never finished" \
  "$run/server-1.log" || fail "server 1 did not say it removed it: $(cat "$run/server-1.log")"
ok "server 1 swept the temporary file a killed write had left, and said so"

# A set missing a server, and a temporary file: verify reads every file and names both.
ckpt=$run/ckpt
: >"$ckpt/server-0-step-0000000650.ckpt.tmp.Xy34Zw"
cp "$ckpt/server-0-step-0000000600.ckpt" "$tmp/keep.ckpt"
rm "$ckpt/server-1-step-0000000600.ckpt"
expect_failure 1 "the newest step, 600, is not a complete set: missing server 1" "$bin/dl-ckpt" verify "$ckpt"
python3 - "$tmp/out" "$ckpt" <<'PY' || fail "verify's sets: $(cat "$tmp/out")"
import json, sys
v = json.load(open(sys.argv[1]))
states = [(s["step"], s["state"]) for s in v["sets"]]
assert states[:3] == [(600, "incomplete"), (550, "complete"), (500, "complete")], states
assert all(step < 500 for step, _ in states[3:]), states  # what a lagging server left (above)
assert v["sets"][0]["missing_servers"] == [1], v["sets"][0]
assert v["temporary"] == [f"{sys.argv[2]}/server-0-step-0000000650.ckpt.tmp.Xy34Zw"], v["temporary"]
PY
"$bin/dl-ckpt" ls "$ckpt" | jq -e '.temporary | length == 1' >/dev/null || fail "dl-ckpt ls does not list the temporary file"
rm "$ckpt/server-0-step-0000000600.ckpt"
"$bin/dl-ckpt" verify "$ckpt" >/dev/null || fail "verify of a directory whose newest set is complete failed"
ok "verify of a directory: sets complete and incomplete, the temporary file listed; exit 1 only for an incomplete newest"

# Without checkpoint_every, worker 0 asks for sets by time (checkpoint_seconds) and at
# every tenth of the run: each is complete, so it was asked at a step no server had passed.
timed=$tmp/timed
SHOAL_BIN=$bin RUN_DIR=$timed "$root/scripts/train-local.sh" --no-eval "$root/configs/fashion-mlp.yaml" \
  cluster.nservers_per_group=2 train.steps=600 train.checkpoint_seconds=0.05 train.display_every=100 \
  data.shards="$(shards_for 2)" >/dev/null 2>"$tmp/timed.err" || fail "the run failed: $(tail -n 5 "$tmp/timed.err")"
"$bin/dl-ckpt" verify "$timed/ckpt" >"$tmp/timed.json" || fail "verify: $(cat "$tmp/timed.json")"
# (Older than the newest three, a server may keep one file of a set the other has pruned, as above.)
jq -e '(.sets | length) >= 3 and all(.sets[:3][]; .state == "complete")' "$tmp/timed.json" >/dev/null ||
  fail "sets asked for by worker 0: $(jq -c '[.sets[] | {step, state}]' "$tmp/timed.json")"
steps=$(jq -r '[.sets[:3][].step] | map(tostring) | join(" ")' "$tmp/timed.json")
jq -e 'any(.sets[:3][]; .step % 60 != 0)' "$tmp/timed.json" >/dev/null || fail "no set by time: steps $steps"
ok "without checkpoint_every, worker 0 asks for sets by time and by tenths of the run, all complete (steps $steps)"

# Under async the servers' versions count every worker's updates: worker 0 asks for each set
# ahead of the newest version it heard of, so a server's crash costs only the versions since
# the newest complete set, not the run. The rate is lowered for async (stale gradients act as
# extra momentum): at the job's 0.05 a run may stall at a uniform guess and be stopped.
async=$tmp/async
SHOAL_CRASH_AT=server-version:900:$tmp/crashed SHOAL_BIN=$bin RUN_DIR=$async RETRIES=3 \
  "$root/scripts/train-local.sh" --no-eval "$root/configs/fashion-mlp.yaml" cluster.nservers_per_group=2 \
  cluster.consistency=async train.learning_rate=0.01 train.steps=600 train.checkpoint_seconds=0.05 \
  train.display_every=100 data.shards="$(shards_for 2)" >/dev/null 2>"$tmp/async.err" || fail "the async run failed: $(tail -n 5 "$tmp/async.err")"
[[ -f "$tmp/crashed" ]] || fail "no server crashed at version 900"
resumed=$(sed -n 's/^train-local: resuming at step \([0-9]*\)$/\1/p' "$tmp/async.err")
# A set is asked at least every tenth of the run (60 steps of worker 0, about 120 versions).
[[ "$resumed" =~ ^[0-9]+$ ]] && ((resumed >= 700 && resumed < 900)) ||
  fail "after a server died at version 900 the run resumed at '$resumed': $(cat "$tmp/async.err")"
"$bin/dl-ckpt" verify "$async/ckpt" >"$tmp/async.json" || fail "verify: $(cat "$tmp/async.json")"
ok "async without checkpoint_every: a server killed at version 900 costs the versions since $resumed"

# Under EASGD a version is an exchange: with easgd_tau 16, two exchanges of every worker take
# longer than the ten steps between two asks, and a later ask keeps the earlier one, so every
# set asked completes.
easgd=$tmp/easgd
SHOAL_BIN=$bin RUN_DIR=$easgd "$root/scripts/train-local.sh" --no-eval "$root/configs/fashion-mlp.yaml" \
  cluster.nservers_per_group=2 cluster.consistency=easgd cluster.easgd_tau=16 train.steps=600 \
  train.checkpoint_seconds=0.05 train.display_every=100 data.shards="$(shards_for 2)" >/dev/null \
  2>"$tmp/easgd.err" || fail "the easgd run failed: $(tail -n 5 "$tmp/easgd.err")"
"$bin/dl-ckpt" verify "$easgd/ckpt" >"$tmp/easgd.json" || fail "verify: $(cat "$tmp/easgd.json")"
jq -e '(.sets | length) >= 3 and all(.sets[:3][]; .state == "complete")' "$tmp/easgd.json" >/dev/null ||
  fail "sets under easgd: $(jq -c '[.sets[] | {step, state}]' "$tmp/easgd.json")"
ok "easgd without checkpoint_every, tau 16: sets asked as it trains, all complete (steps $(jq -r '[.sets[:3][].step] | map(tostring) | join(" ")' "$tmp/easgd.json"))"
