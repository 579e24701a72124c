#!/usr/bin/env bash
# Failure recovery with real kill -9: a run whose server or worker is killed
# mid-run completes, and ends where the undisturbed run ends (BSP repeats the
# lost steps exactly, dropout's masks too); a server killed while it writes a
# checkpoint leaves the previous one intact, and the run resumes from it.
. "$(dirname "$0")/lib.sh"

shards=$(shards_for 2)
job=(train.steps=600 train.checkpoint_every=100 train.display_every=50 data.shards="$shards")
# The MLP with dropout after its first ReLU: a restarted process must draw the masks it drew.
sed 's/- {name: fc2, type: fully_connected, srclayers: relu1,/- {name: drop1, type: dropout, srclayers: relu1, ratio: 0.2}\n    - {name: fc2, type: fully_connected, srclayers: drop1,/' \
  "$root/configs/fashion-mlp.yaml" >"$tmp/mlp-dropout.yaml"
grep -q "srclayers: drop1" "$tmp/mlp-dropout.yaml" || fail "the dropout job was not made"

train() {  # train NAME [override...]: runs train-local in the background
  local name=$1
  shift
  SHOAL_BIN=$bin RUN_DIR=$tmp/$name BASE_PORT=$(fresh_port) "$root/scripts/train-local.sh" \
    "$tmp/mlp-dropout.yaml" "${job[@]}" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
}
wait_for_step() {  # wait_for_step NAME STEP: until worker 0 reports STEP
  for _ in $(seq 300); do
    [[ -f "$tmp/$1/worker-0.jsonl" ]] && grep -q "\"step\":$2," "$tmp/$1/worker-0.jsonl" && return
    sleep 0.05
  done
  fail "$1 never reached step $2"
}
accuracy() { field "$tmp/$1/worker-0.jsonl" "done" "r['test_accuracy']"; }
close_to() { python3 -c "import sys; sys.exit(0 if abs(float(sys.argv[1]) - float(sys.argv[2])) <= 0.01 else 1)" "$1" "$2"; }

train calm
wait $! || fail "the undisturbed run failed: $(cat "$tmp/calm.err")"
calm=$(accuracy calm)
ok "undisturbed: test accuracy $calm"

train server-killed
runner=$!
wait_for_step server-killed 250
pkill -9 -f "dl-server --plan $tmp/server-killed/plan.json" || fail "no server to kill"
wait "$runner" || fail "the run did not survive its server's death: $(cat "$tmp/server-killed.err")"
# Its death is seen first as its own exit (137), or as a worker's giving up on it.
grep -qE "server 0 died \((exit 137|worker [01] gave up on it: exit 3)\); restarting every server" \
  "$tmp/server-killed.err" ||
  fail "no restart logged: $(cat "$tmp/server-killed.err")"
# From the newest checkpoint before the kill: step 200, or 300 where the kill came late (a loaded machine).
grep -qE "resuming at step [23]00" "$tmp/server-killed.err" ||
  fail "did not resume from the newest checkpoint: $(cat "$tmp/server-killed.err")"
got=$(accuracy server-killed)
close_to "$got" "$calm" || fail "after a server kill: accuracy $got, undisturbed $calm"
"$bin/dl-ckpt" diff "$(ls "$tmp"/calm/ckpt/*-0000000600.ckpt)" "$(ls "$tmp"/server-killed/ckpt/*-0000000600.ckpt)" \
  >"$tmp/diff.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d['max_rel'] <= 1e-6 else 1)" "$tmp/diff.json" ||
  fail "the resumed run's final parameters differ from the undisturbed run's: $(head -c 300 "$tmp/diff.json")"
ok "kill -9 of the server at step ~250: resumed from its newest checkpoint, completed with the undisturbed run's parameters, accuracy $got"

train worker-killed
runner=$!
wait_for_step worker-killed 300
pkill -9 -f "dl-worker --plan $tmp/worker-killed/plan.json --id 1 " || fail "no worker to kill"
wait "$runner" || fail "the run did not survive a worker's death: $(cat "$tmp/worker-killed.err")"
grep -q "worker 1 died (exit 137); restarting it: it rejoins" "$tmp/worker-killed.err" || fail "no restart logged"
grep -q "rejoins at step" "$tmp/worker-killed/worker-1.log" || fail "worker 1 did not rejoin"
got=$(accuracy worker-killed)
close_to "$got" "$calm" || fail "after a worker kill: accuracy $got, undisturbed $calm"
ok "kill -9 of worker 1 at step ~300: it rejoined, the run completed, accuracy $got"

# Both workers killed at once: the supervisor hears one death while the other
# has already been reaped by the shell (a death it must not lose, or the run
# waits on a worker nobody restarts).
train workers-killed
runner=$!
wait_for_step workers-killed 300
pkill -9 -f "dl-worker --plan $tmp/workers-killed/plan.json " || fail "no workers to kill"
wait "$runner" || fail "the run did not survive its workers' deaths: $(cat "$tmp/workers-killed.err")"
for w in 0 1; do
  grep -q "worker $w died (exit 137); restarting it" "$tmp/workers-killed.err" ||
    fail "worker $w's death not heard: $(cat "$tmp/workers-killed.err")"
done
got=$(accuracy workers-killed)
close_to "$got" "$calm" || fail "after both workers' kill: accuracy $got, undisturbed $calm"
ok "kill -9 of both workers at once at step ~300: both rejoined, the run completed, accuracy $got"

# A whole run stopped at step ~350 and resumed with --resume goes on from
# its newest checkpoint (step 300) to the undisturbed run's end.
train stopped
runner=$!
wait_for_step stopped 350
kill -TERM "$runner"
wait "$runner" || true
! pgrep -f "$tmp/stopped/plan.json" >/dev/null || fail "the stopped run left processes"
SHOAL_BIN=$bin "$root/scripts/train-local.sh" --resume "$tmp/stopped" >"$tmp/resumed.out" 2>"$tmp/resumed.err" ||
  fail "--resume failed: $(cat "$tmp/resumed.err")"
grep -qE "resuming at step [34]00" "$tmp/resumed.err" ||  # 400 where the stop came late
  fail "did not resume from the newest checkpoint: $(cat "$tmp/resumed.err")"
got=$(accuracy stopped)
[[ "$got" == "$calm" ]] || fail "the resumed run ends at accuracy $got, the undisturbed one at $calm"
ok "a run stopped at step ~350 and resumed with --resume ends as the undisturbed run (accuracy $got)"

# Killed while writing its second checkpoint (step 200), deterministically.
dir=$tmp/crash
mkdir -p "$dir"
port=$(fresh_port)
"$bin/dl-plan" "$root/configs/fashion-mlp.yaml" --strategy data --base-port "$port" \
  --set train.steps=300 --set train.checkpoint_every=100 --set cluster.timeout_ms=20000 -o "$dir/plan.json"
rc=0
SHOAL_CRASH_AT=atomic-write:2 "$bin/dl-server" --plan "$dir/plan.json" --checkpoint-dir "$dir/ckpt" \
  >/dev/null 2>"$dir/server.log" &
server=$!
for w in 0 1; do
  "$bin/dl-worker" --plan "$dir/plan.json" --id $w --shards "$shards" --timeout-ms 2000 >/dev/null 2>&1 &
done
wait "$server" || rc=$?
[[ $rc -eq 137 ]] || fail "the server did not die in its checkpoint write (exit $rc)"
wait || true
ls "$dir"/ckpt/*.tmp.* >/dev/null 2>&1 || fail "no half-written temporary file was left"
[[ ! -e "$dir/ckpt/server-0-step-0000000200.ckpt" ]] || fail "a half-written checkpoint took the real name"
"$bin/dl-ckpt" verify "$dir/ckpt" >/dev/null || fail "the previous checkpoint does not verify"
"$bin/dl-ckpt" prepare-resume "$dir/ckpt" -o "$dir/resume" >"$dir/resume.json" || fail "prepare-resume failed"
[[ $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step"])' "$dir/resume.json") == 100 ]] ||
  fail "prepare-resume did not pick step 100: $(cat "$dir/resume.json")"
ok "a server killed while writing checkpoint 200 left checkpoint 100 whole and the half-written file aside"

"$bin/dl-server" --plan "$dir/plan.json" --checkpoint-dir "$dir/ckpt" --resume "$dir/resume" \
  >"$dir/server.jsonl" 2>>"$dir/server.log" &
server=$!
"$bin/dl-worker" --plan "$dir/plan.json" --id 1 --shards "$shards" --no-eval >/dev/null 2>"$dir/w1.log" &
"$bin/dl-worker" --plan "$dir/plan.json" --id 0 --shards "$shards" >"$dir/w0.jsonl" 2>"$dir/w0.log" ||
  fail "worker 0 failed after the resume: $(cat "$dir/w0.log")"
wait "$server" || fail "the resumed server failed: $(cat "$dir/server.log")"
grep -q "resumed from '$dir/resume/server-0-step-0000000100.ckpt' at version 100" "$dir/server.log" ||
  fail "the server did not say where it resumed: $(cat "$dir/server.log")"
grep -q "rejoins at step 100" "$dir/w0.log" || fail "worker 0 did not rejoin at step 100"
[[ $(field "$dir/server.jsonl" server_done "r['version']") == 300 ]] || fail "the resumed run did not reach step 300"
ok "resumed from checkpoint 100: the workers rejoined at step 100 and the run reached step 300"
