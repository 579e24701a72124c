#!/usr/bin/env bash
# A model-parallel group cannot go on without one of its workers: when one is
# killed, its peers stop within two timeouts (exit 3), naming the worker they
# waited for — they never hang.
. "$(dirname "$0")/lib.sh"

port=$(fresh_port)
# Short enough to keep the test short; long enough that three sanitized
# workers starting at once on a loaded machine reach the server in time.
timeout_ms=5000
"$bin/dl-plan" "$root/configs/fashion-mlp.yaml" --strategy model --group-size 3 --base-port "$port" \
  --set cluster.nworkers_per_group=3 --set train.steps=100000 --set train.display_every=10 \
  --set cluster.timeout_ms=$timeout_ms -o "$tmp/plan.json"
"$bin/dl-server" --plan "$tmp/plan.json" >"$tmp/server.jsonl" 2>"$tmp/server.log" &
wait_serving "$tmp/server.log"
for w in 0 1 2; do
  "$bin/dl-worker" --plan "$tmp/plan.json" --id "$w" --shards "$(shards_for 3)" --no-eval \
    >"$tmp/w$w.jsonl" 2>"$tmp/w$w.log" &
  pids[w]=$!
done
for ((i = 0; i < 600; i++)); do  # until the group is training (up to a minute on a loaded machine)
  grep -q '"event":"step"' "$tmp/w0.jsonl" 2>/dev/null && break
  kill -0 "${pids[@]}" 2>/dev/null || break
  sleep 0.1
done
grep -q '"event":"step"' "$tmp/w0.jsonl" || fail "the group did not start training: $(cat "$tmp"/w*.log "$tmp/server.log")"
kill -9 "${pids[1]}"
killed_at=$SECONDS
for w in 0 2; do
  rc=0
  wait "${pids[w]}" || rc=$?
  ((rc == 3)) || fail "worker $w exited $rc, want 3: $(cat "$tmp/w$w.log")"
  # Waiting on worker 1 itself, or on the server for a layer worker 1 holds
  # too (killed after its features went, before its update): either names it.
  grep -Eq "waited $timeout_ms ms for (features|gradients) of layer '[a-z0-9]+'.* \(step [0-9]+\) from worker 1 at 'tcp://127.0.0.1:[0-9]+'|gave up on 'update-get' \(step [0-9]+\): waited $timeout_ms ms for version [0-9]+; the table is at [0-9]+: layer '[a-z0-9]+' has step [0-9]+ from [0-9] of its 3 workers: not from workers? ([0-9], )*1(, [0-9])*$" \
    "$tmp/w$w.log" || fail "worker $w did not name worker 1: $(cat "$tmp/w$w.log")"
done
# One waiting on the server may hear once that its peer waiting on worker 1
# is busy (the peer told the server it was computing its step), and ask
# again: two timeouts bound that wait (Keepalive).
((SECONDS - killed_at <= 2 * timeout_ms / 1000 + 3)) ||
  fail "the peers took $((SECONDS - killed_at)) s to give up (timeout $timeout_ms ms): $(cat "$tmp"/w[02].log "$tmp/server.log")"
ok "worker 1 of a model-parallel group killed: workers 0 and 2 exit 3 within two timeouts, naming worker 1"

# Under train-local, a group member's death restarts every process from the
# newest complete checkpoint set at once (a restarted worker could not take up
# a step its peers are in), and the run ends with the undisturbed one's bits.
supervised() {  # supervised NAME: 200 steps of a model-parallel group of 2, in the background
  SHOAL_BIN=$bin RUN_DIR=$tmp/$1 BASE_PORT=$(fresh_port) "$root/scripts/train-local.sh" \
    "$root/configs/fashion-mlp.yaml" --strategy model --group-size 2 train.steps=200 train.checkpoint_every=20 \
    train.eval_every=0 data.shards="$(shards_for 2)" >"$tmp/$1.out" 2>"$tmp/$1.err" &
}
supervised calm
wait $! || fail "the undisturbed group run failed: $(cat "$tmp/calm.err")$(run_logs "$tmp/calm")"
supervised killed
runner=$!
kill_worker_at "$tmp/killed" 100 1
wait "$runner" || fail "the group run did not survive a worker's death: $(cat "$tmp/killed.err")"
grep -q "worker 1 died (exit 137); the other workers exchange with it inside every step; restarting every server" \
  "$tmp/killed.err" || fail "no restart of every process logged: $(cat "$tmp/killed.err")"
same_bits "$tmp/calm" "$tmp/killed" 200
ok "train-local, a model-parallel group's worker killed at step ~100: every process restarts, the run ends bit for bit"
