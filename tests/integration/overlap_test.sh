#!/usr/bin/env bash
# train.overlap changes when parameters travel, not what is computed: BSP
# runs with a request per layer (overlap_bucket_floats 0), with the default
# buckets, and with one exchange per step (overlap off) end with the same
# parameters to the bit — the MLP and the CNN data parallel, the MLP model
# parallel over 3 servers, and with layers placed on one rank over 8 servers
# (some hold nothing of a worker's). The servers' counts show each run sent
# what it should; async layer by layer loses no update.
. "$(dirname "$0")/lib.sh"

steps=12
# run NAME MODEL-JOB [DL-PLAN OPTION...]: 2 workers x 32 for `steps` steps; merges the checkpoints.
run() {
  local name=$1 dir=$tmp/$1 job=$2 port
  shift 2
  port=$(fresh_port)
  mkdir -p "$dir"
  "$bin/dl-plan" "$job" --base-port "$port" -o "$dir/plan.json" --set cluster.nworkers_per_group=2 \
    --set train.batch_size=32 --set train.steps=$steps --set train.display_every=$steps "$@" ||
    fail "dl-plan $* failed"
  local servers pids=()
  servers=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["servers"]))' "$dir/plan.json")
  for ((s = 0; s < servers; s++)); do
    "$bin/dl-server" --plan "$dir/plan.json" --id $s --checkpoint-dir "$dir/ckpt" >"$dir/server-$s.jsonl" \
      2>"$dir/server-$s.log" &
    pids+=($!)
  done
  for w in 0 1; do
    "$bin/dl-worker" --plan "$dir/plan.json" --id $w --shards "$(shards_for 2)" --no-eval >"$dir/w$w.jsonl" \
      2>"$dir/w$w.log" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || fail "$name: a process failed: $(tail -n 3 "$dir"/*.log)"; done
  "$bin/dl-ckpt" merge "$dir/ckpt" -o "$dir/merged.ckpt" >/dev/null || fail "cannot merge $name's checkpoints"
}

# same A B: bit for bit.
same() {
  "$bin/dl-ckpt" diff "$tmp/$1/merged.ckpt" "$tmp/$2/merged.ckpt" >"$tmp/$2/diff.json"
  python3 - "$tmp/$2/diff.json" <<'PY' || fail "$2 differs from $1: $(cat "$tmp/$2/diff.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["step_a"] == d["step_b"] and not d["only_in_a"] and not d["only_in_b"], d
assert d["max_rel"] == 0.0, d["max_rel"]
PY
}

# updates NAME: the updates the servers took in, summed.
updates() {
  python3 - "$tmp/$1" <<'PY'
import glob, json, sys
print(sum([json.loads(l) for l in open(p) if "server_done" in l][-1]["updates_received"]
          for p in glob.glob(sys.argv[1] + "/server-*.jsonl")))
PY
}

mlp=$root/configs/fashion-mlp.yaml
run mlp-off "$mlp" --strategy data --set train.overlap=false
run mlp-layers "$mlp" --strategy data --set train.overlap_bucket_floats=0
run mlp-buckets "$mlp" --strategy data
same mlp-off mlp-layers
same mlp-off mlp-buckets
# 2 workers x 12 steps: one update each per step off and in one bucket, one per layer (3) per step layer by layer.
[[ $(updates mlp-off) -eq 24 && $(updates mlp-buckets) -eq 24 && $(updates mlp-layers) -eq 72 ]] ||
  fail "updates taken in: off $(updates mlp-off), buckets $(updates mlp-buckets), layers $(updates mlp-layers)"
ok "MLP, data parallel: a request per layer, default buckets and overlap off end bit for bit alike"

# A display every step takes the step's values inside the step, so the time waited for them is
# the servers' (it once fell between steps, counted nowhere), and the result is the same.
run mlp-display "$mlp" --strategy data --set train.display_every=1
same mlp-off mlp-display
python3 - "$tmp/mlp-display/w0.jsonl" <<'PY' || fail "worker 0's time with a display every step: $(tail -n 1 "$tmp/mlp-display/w0.jsonl")"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
assert sum(r.get("event") == "step" for r in records) == 12, records
t = [r for r in records if r.get("event") == "done"][-1]["time_s"]
assert t["wait_servers"] > 0 and abs(t["compute"] + t["encode"] + t["wait_servers"] + t["decode"] - t["steps"]) < 1e-6, t
PY
ok "a display every step: the same parameters, and worker 0 counts its wait for the servers"

# Async, a request per layer: each layer is applied as it comes, and a
# worker's step counts once its every layer is in — none lost, none twice.
run mlp-async "$mlp" --strategy data --set cluster.consistency=async --set train.overlap_bucket_floats=0 \
  --set train.learning_rate=0.02
python3 - "$tmp/mlp-async/server-0.jsonl" $steps <<'PY' || fail "async layer by layer lost or repeated updates"
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if "server_done" in l][-1]
steps = int(sys.argv[2])
assert r["updates_from"] == [steps, steps], r["updates_from"]
assert r["updates_applied"] == 2 * steps and r["updates_received"] == 6 * steps, r
PY
ok "async, a request per layer: each worker's $steps steps taken in, $((2 * steps)) applied"

cnn=$root/configs/fashion-cnn.yaml
run cnn-off "$cnn" --strategy data --set train.overlap=false
run cnn-buckets "$cnn" --strategy data
same cnn-off cnn-buckets
# The default buckets send the fully connected layers, then the convolutions: 2 per worker and step.
[[ $(updates cnn-buckets) -eq 48 ]] || fail "CNN updates taken in with buckets: $(updates cnn-buckets), want 48"
ok "CNN, data parallel: its two buckets end bit for bit as overlap off"

run model-off "$mlp" --strategy model --group-size 2 --set cluster.nservers_per_group=3 \
  --set cluster.slice_floats=50000 --set train.overlap=false
run model-layers "$mlp" --strategy model --group-size 2 --set cluster.nservers_per_group=3 \
  --set cluster.slice_floats=50000 --set train.overlap_bucket_floats=0
same model-off model-layers
# Every layer's partition written: the planner's choice depends on train.overlap.
sed -e 's/{name: fc1, /{name: fc1, partition_dim: -1, location: "0", /' \
  -e 's/{name: fc3, /{name: fc3, partition_dim: -1, location: "1", /' \
  -e 's/{name: \(relu1\|fc2\|relu2\), /{name: \1, partition_dim: 0, /' "$mlp" >"$tmp/placed.yaml"
run placed-off "$tmp/placed.yaml" --group-size 2 --set cluster.nservers_per_group=8 \
  --set cluster.slice_floats=100000 --set train.overlap=false
run placed-layers "$tmp/placed.yaml" --group-size 2 --set cluster.nservers_per_group=8 \
  --set cluster.slice_floats=100000 --set train.overlap_bucket_floats=0
same placed-off placed-layers
ok "MLP, model parallel over 3 servers and with placed layers over 8: layer by layer = overlap off, bit for bit"

# The comparison can fail: a learning rate 1% off differs.
run mlp-other "$mlp" --strategy data --set train.overlap_bucket_floats=0 --set train.learning_rate=0.0505
if (same mlp-off mlp-other) 2>/dev/null; then fail "the comparison cannot tell runs apart"; fi
ok "a run with another learning rate is told apart"
