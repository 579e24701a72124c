#!/usr/bin/env bash
# Hybrid plans under the consistency models that do not wait for every
# worker: 2 worker groups (Downpour's shape), each a model-parallel group of
# 2 (every layer split by features), 3 servers, the MLP, 400 steps, async,
# SSP (slack 1) and EASGD. Each reaches a stated accuracy; every server's
# table holds each worker's 400 steps (each worker holds a part of every
# layer, so a step counts once each of its layers is in), taken in by the
# server itself unless the supervisor restarted the run from a checkpoint,
# which the test reports as a WARNING; SSP never served a read staler than
# the slack; under async each server took each of the 4 workers' updates of
# every step (a server holds a third of every rank's part): 1600 versions.
. "$(dirname "$0")/lib.sh"

steps=400
# train NAME BOUND OVERRIDE...: trains; checks test accuracy >= BOUND and the servers' counts.
train() {
  local name=$1 bound=$2 run=$tmp/$1
  shift 2
  SHOAL_BIN=$bin RUN_DIR=$run BASE_PORT=$(fresh_port) STRATEGY=model GROUP_SIZE=2 \
    "$root/scripts/train-local.sh" "$root/configs/fashion-mlp.yaml" train.steps=$steps train.learning_rate=0.02 \
    cluster.nworker_groups=2 cluster.nworkers_per_group=2 cluster.nservers_per_group=3 cluster.slice_floats=50000 \
    data.shards="$(shards_for 4)" "$@" >/dev/null 2>"$tmp/$name.log" ||
    fail "$name: train-local failed: $(tail -n 5 "$tmp/$name.log")"
  accuracy=$(field "$run/worker-0.jsonl" "done" "r['test_accuracy']")
  python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)" "$accuracy" "$bound" ||
    fail "$name: test accuracy $accuracy < $bound"
  local restarts
  restarts=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['restarts'])" "$run/run.json")
  python3 - "$run" $steps "$restarts" <<'PY' || fail "$name: the servers' counts are off; train-local said:
$(cat "$tmp/$name.log")$(run_logs "$run")"
import glob, json, sys
run, steps, restarts = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
servers = sorted(glob.glob(run + "/server-*.jsonl"))
assert len(servers) == 3, servers
for path in servers:
    r = [json.loads(l) for l in open(path) if "server_done" in l][-1]
    assert r["steps_from"] == [steps] * 4, (path, r["steps_from"])
    # Without a restart the server took in every one of them itself.
    if restarts == 0:
        assert r["updates_from"] == [steps] * 4, (path, r["updates_from"])
    assert r["workers_done"] == 4, (path, r["workers_done"])
    if r["consistency"] == "ssp":
        assert r["max_staleness_served"] <= 1, (path, r["max_staleness_served"])
    if r["consistency"] == "async":
        assert r["version"] == 4 * steps, (path, r["version"])
PY
  # Nothing here is killed, so a restart is a fault (a stall the supervisor
  # recovered from). The result is still whole; the test says so in a line
  # .ci/run prints from passing tests too, with what each process said.
  ((restarts == 0)) ||
    echo "WARNING: $name: train-local restarted $restarts time(s): $(grep restarting "$tmp/$name.log")$(run_logs "$run")"
}

# Async's accuracy depends on how stale its reads happen to be: 0.73 was seen
# under the sanitizers' slower timing, 0.78-0.80 at full speed. Worker 0
# evaluates the servers' values as they are when it ends, with the other
# group a step or two from its own end: SSP's ranged 0.764-0.826 over 150
# sanitized runs, EASGD's 0.809-0.822 over 75.
train async 0.70 cluster.consistency=async
ok "async, 2 model-parallel groups of 2 over 3 servers: test accuracy $accuracy (>= 0.70), no step lost"
train ssp 0.73 cluster.consistency=ssp cluster.staleness=1
ok "SSP (slack 1), the same: test accuracy $accuracy (>= 0.73), no read staler than the slack"
train easgd 0.78 cluster.consistency=easgd
ok "EASGD, the same: test accuracy $accuracy (>= 0.78), every exchange taken in"
