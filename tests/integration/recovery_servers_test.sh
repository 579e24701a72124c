#!/usr/bin/env bash
# Exact recovery with several servers (BSP): a worker killed between its sends
# to two servers, workers killed with kill -9 at random steps, and servers
# killed at random steps, with 2 and 3 servers and overlap on and off — every
# run ends with the undisturbed run's parameters and updater state, bit for bit.
. "$(dirname "$0")/lib.sh"

shards=$(shards_for 2)
steps=400
# Slices of at most 20000 floats: every layer's parameters are spread over every server.
job=("train.steps=$steps" train.checkpoint_every=50 train.display_every=10 cluster.slice_floats=20000
     data.shards="$shards")

train() {  # train NAME SERVERS [override...]: runs train-local in the background
  local name=$1 servers=$2
  shift 2
  SHOAL_BIN=$bin RUN_DIR=$tmp/$name RETRIES=10 "$root/scripts/train-local.sh" "$root/configs/fashion-mlp.yaml" \
    "${job[@]}" cluster.nservers_per_group="$servers" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
}
wait_for_step() {  # wait_for_step NAME STEP RUNNER: until worker 0 reports STEP (or the run ends)
  # However slow a loaded machine makes the run: ctest's timeout bounds it.
  until [[ -f "$tmp/$1/worker-0.jsonl" ]] && grep -q "\"step\":$2," "$tmp/$1/worker-0.jsonl"; do
    kill -0 "$3" 2>/dev/null || return 1
    sleep 0.02
  done
}
# same A B: the final checkpoints of runs A and B hold the same bits, every tensor.
same() {
  "$bin/dl-ckpt" merge "$tmp/$1/ckpt" -o "$tmp/$1.merged" --step $steps >/dev/null || fail "$1: no step $steps"
  "$bin/dl-ckpt" merge "$tmp/$2/ckpt" -o "$tmp/$2.merged" --step $steps >/dev/null || fail "$2: no step $steps"
  "$bin/dl-ckpt" diff "$tmp/$1.merged" "$tmp/$2.merged" >"$tmp/diff.json"
  python3 - "$tmp/diff.json" <<'PY' || fail "$2's parameters differ from $1's: $(head -c 400 "$tmp/diff.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert not d["only_in_a"] and not d["only_in_b"] and len(d["tensors"]) == 12, d
assert d["max_abs"] == 0.0, d["max_abs"]
PY
}
finished() {  # finished NAME RUNNER: the run succeeded
  wait "$2" || fail "$1 failed: $(tail -n 8 "$tmp/$1.err")$(run_logs "$tmp/$1")"
}

train calm-2 2
finished calm-2 $!
train calm-3 3
finished calm-3 $!
ok "undisturbed runs with 2 and 3 servers"

# Deterministic: the worker that first reaches its 202nd request of
# gradients dies once every request before it has left: with overlap on, one
# lane per server and step, it has sent step 100 to server 0, not to server 1
# (with 3 servers and overlap off, the 302nd: step 100 to server 0, not to 1 and 2).
rm -f "$tmp/crashed-2"
SHOAL_CRASH_AT=worker-between-sends:202:$tmp/crashed-2 train between-2 2
finished between-2 $!
[[ -f "$tmp/crashed-2" ]] || fail "no worker crashed between its sends"
grep -qE "worker [01] died \(exit 137\); restarting it" "$tmp/between-2.err" || fail "no restart: $(cat "$tmp/between-2.err")"
same calm-2 between-2
ok "2 servers, overlap on: a worker killed between its sends of step 100 rejoins; parameters bit for bit as undisturbed"

rm -f "$tmp/crashed-3"
SHOAL_CRASH_AT=worker-between-sends:302:$tmp/crashed-3 train between-3 3 train.overlap=false
finished between-3 $!
[[ -f "$tmp/crashed-3" ]] || fail "no worker crashed between its sends"
same calm-3 between-3
ok "3 servers, overlap off: a worker killed between its sends of step 100 rejoins; parameters bit for bit"

# kill_randomly NAME SERVERS KIND COUNT FIRST LAST PAUSE: a run of NAME on
# SERVERS servers whose KIND (dl-worker or dl-server) of id 0 or 1 is killed
# with kill -9 COUNT times, at random steps of FIRST, FIRST+10, ... below LAST, PAUSE seconds
# apart; the kills that landed are in `kills`.
kill_randomly() {
  local name=$1 servers=$2 kind=$3 count=$4 first=$5 last=$6 pause=$7 runner step victim
  kills=()
  train "$name" "$servers"
  runner=$!
  for step in $(python3 -c "import random; print(*sorted(random.sample(range($first, $last, 10), $count)))"); do
    wait_for_step "$name" "$step" "$runner" || break
    victim=$((RANDOM % 2))
    pkill -9 -f "$kind --plan $tmp/$name/plan.json --id $victim " && kills+=("${kind#dl-} $victim at ~$step")
    sleep "$pause"
  done
  finished "$name" "$runner"
}

# Random kill -9 of workers, three times in one run.
kill_randomly workers-3 3 dl-worker 3 30 $((steps - 60)) 0.3
((${#kills[@]} >= 2)) || fail "too few kills landed: ${kills[*]}; the run said: $(cat "$tmp/workers-3.err")$(run_logs "$tmp/workers-3")"
same calm-3 workers-3
ok "3 servers: kill -9 of ${kills[*]}: parameters bit for bit as undisturbed"

# Random kill -9 of servers: every process comes back from the newest checkpoint all servers have.
kill_randomly servers-2 2 dl-server 2 60 $((steps - 80)) 1
((${#kills[@]} >= 1)) || fail "no kill landed; the run said: $(cat "$tmp/servers-2.err")$(run_logs "$tmp/servers-2")"
same calm-2 servers-2
ok "2 servers: kill -9 of ${kills[*]}: parameters bit for bit as undisturbed"
