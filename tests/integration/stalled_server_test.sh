#!/usr/bin/env bash
# A server stopped (SIGSTOP) past cluster.timeout_ms: its workers give up on
# it (exit 3), and the supervisor names the server, not a worker, as what
# failed; it kills the stopped server (SIGKILL after SIGTERM's grace),
# restarts every server from the newest complete checkpoint set, and the BSP
# run ends bit for bit as the undisturbed one. A stopped data-parallel worker
# is named from what its server answered the other ("not from worker 1"), and
# the run, restarted whole, ends bit for bit as well.
. "$(dirname "$0")/lib.sh"

train=(env SHOAL_BIN="$bin" "$root/scripts/train-local.sh" --no-eval --stop-grace 3 "$root/configs/fashion-mlp.yaml"
  cluster.nservers_per_group=2 cluster.timeout_ms=2000 train.steps=500 train.checkpoint_every=100
  train.display_every=50 data.shards="$(shards_for 2)")
RUN_DIR=$tmp/calm "${train[@]}" >/dev/null 2>"$tmp/calm.err" || fail "the undisturbed run failed: $(cat "$tmp/calm.err")"

# stalled RUN TOOL ID: runs the job in $tmp/RUN and, once its step-200 set
# begins, stops (SIGSTOP) its process TOOL --id ID; waits for the run to end.
stalled() {
  RUN_DIR=$tmp/$1 "${train[@]}" >/dev/null 2>"$tmp/$1.err" &
  local runner=$!
  for _ in $(seq 600); do
    [[ -f "$tmp/$1/ckpt/server-0-step-0000000200.ckpt" ]] && break
    sleep 0.05
  done
  pkill -STOP -f "$2 --plan $tmp/$1/plan.json --id $3 " || fail "no $2 --id $3 to stop"
  wait "$runner"
}

stalled stalled dl-server 0 || fail "the run with a stopped server failed: $(cat "$tmp/stalled.err")"
grep -qE "server 0 stopped answering \(worker [01] gave up on it: exit 3[;)].*; restarting every server" \
  "$tmp/stalled.err" || fail "the supervisor did not name the stopped server: $(cat "$tmp/stalled.err")"
! grep -q "server 1 died\|worker [01] died" "$tmp/stalled.err" ||
  fail "the supervisor blamed another process: $(cat "$tmp/stalled.err")"
ok "a stopped server is named as what failed, killed and restarted with the others"

# same_as_calm RUN: both servers' final checkpoints equal the undisturbed run's, bit for bit.
same_as_calm() {
  local s
  for s in 0 1; do
    "$bin/dl-ckpt" diff "$tmp/calm/ckpt/server-$s-step-0000000500.ckpt" \
      "$tmp/$1/ckpt/server-$s-step-0000000500.ckpt" >"$tmp/diff.json" ||
      fail "$1: server $s's final checkpoints differ: $(cat "$tmp/diff.json")"
    [[ $(jq .max_abs "$tmp/diff.json") == 0 ]] || fail "$1: server $s: $(cat "$tmp/diff.json")"
  done
}
same_as_calm stalled
ok "the run recovered from the stopped server ends bit for bit as the undisturbed one"

stalled stalled-worker dl-worker 1 || fail "the run with a stopped worker failed: $(cat "$tmp/stalled-worker.err")"
grep -qE "worker 1 stopped answering \(worker 0 gave up on it: exit 3[;)].*; restarting every server" \
  "$tmp/stalled-worker.err" || fail "the supervisor did not name the stopped worker: $(cat "$tmp/stalled-worker.err")"
same_as_calm stalled-worker
ok "a stopped worker is named from its server's answer, and the run restarted whole ends bit for bit"
