#!/usr/bin/env bash
# dl-plan's search end to end: the shipped models plan and validate against the
# schema, AlexNet takes Krizhevsky's hybrid, --strategy fixes the partition,
# `dl-plan calibrate` writes a profile dl-plan loads, and bad input is refused.
. "$(dirname "$0")/lib.sh"

gbe=$root/configs/clusters/1gbe-8node.yaml

for model in alexnet adamlike vgg16 googlenet googlenet-style char-rnn; do
  "$bin/dl-plan" "$root/configs/models/$model.yaml" --cluster "$gbe" -o "$tmp/$model.json" || fail "dl-plan $model"
  validate_plan "$tmp/$model.json" || fail "$model's plan does not validate"
done
ok "the plan-only models plan on the 1 Gbit/s profile and validate"

python3 - "$tmp/alexnet.json" <<'PY' || fail "AlexNet's plan is not the hybrid"
import json, sys
p = json.load(open(sys.argv[1]))
dims = {l["name"]: l["partition_dim"] for l in p["layers"]}
types = {l["name"]: l["type"] for l in p["layers"]}
assert p["strategy"] == "optimal"
assert all(dims[n] == 0 for n, t in types.items() if t in ("convolution", "pooling")), dims
assert all(dims[n] != 0 for n, t in types.items() if t == "fully_connected"), dims
t = p["planner"]["totals"]
assert t["chosen"]["seconds"] < t["all_data"]["seconds"] and t["chosen"]["seconds"] < t["all_model"]["seconds"]
assert [l["partition_dim"] for l in p["planner"]["layers"]] == [l["partition_dim"] for l in p["layers"]]
PY
ok "AlexNet: convolutions data parallel, fully connected model parallel, cheaper than both pure plans"

"$bin/dl-plan" "$root/configs/models/alexnet.yaml" --cluster "$gbe" --explain -o "$tmp/explained.json" 2>"$tmp/table" ||
  fail "dl-plan --explain"
grep -q "^fc6 .*fully_connected.*model" "$tmp/table" || fail "the table lacks fc6's choice: $(cat "$tmp/table")"
grep -q "all data parallel" "$tmp/table" || fail "the table lacks the all-data total"
ok "--explain prints a table with each layer's choice and the totals"

"$bin/dl-plan" "$root/configs/models/alexnet.yaml" --cluster "$gbe" --strategy data -o "$tmp/data.json" ||
  fail "dl-plan --strategy data"
validate_plan "$tmp/data.json" || fail "the data-parallel plan does not validate"
python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))
assert p['strategy'] == 'data' and all(l['partition_dim'] == 0 for l in p['layers'])" "$tmp/data.json" ||
  fail "--strategy data left a layer off dim 0"
ok "--strategy data puts every layer on partition_dim 0"

"$bin/dl-plan" calibrate --seconds 0.05 --nodes 4 -o "$tmp/profile.yaml" || fail "dl-plan calibrate"
python3 - "$tmp/profile.yaml" <<'PY' || fail "the calibrated profile is not positive: $(cat "$tmp/profile.yaml")"
import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
assert p["bandwidth_gbps"] > 0 and p["gflops_per_worker"] > 0 and p["latency_us"] >= 0 and p["nodes"] == 4
assert p["layer_gflops"]["convolution"] > 0 and p["layer_gflops"]["fully_connected"] > 0, p
assert p["half_rate_records"] >= 0 and p["compute_cv"] >= 0 and p["workers_per_node"] == 1, p
assert p["compute_cv_seconds"] > 0 and p["server_memory_gb_per_s"] > 0 and p["winograd_speedup"] > 0, p
PY
"$bin/dl-plan" "$root/configs/fashion-mlp.yaml" --cluster "$tmp/profile.yaml" -o "$tmp/calibrated.json" ||
  fail "dl-plan with the calibrated profile"
ok "dl-plan calibrate writes a profile (compute by layer type and batch, its spread, memory, network) that dl-plan loads"

# --fit-run: a standalone run of the Fashion-MNIST CNN, its records beside
# its plan, fits each layer type's rate; under the fitted profile the model
# gives each type's layers the seconds the worker measured.
fashion=$(shards_for 1)
mkdir "$tmp/run"
cnn=("$root/configs/fashion-cnn.yaml" --set "data.shards=$fashion" --set train.batch_size=32
     --set cluster.nworkers_per_group=1 --strategy data)
"$bin/dl-plan" "${cnn[@]}" -o "$tmp/run/plan.json" || fail "dl-plan of the CNN"
"$bin/dl-worker" --plan "$tmp/run/plan.json" --standalone --no-eval --steps 8 --shards "$fashion" \
  >"$tmp/run/worker-0.jsonl" 2>"$tmp/run/worker-0.log" || fail "the standalone run: $(tail -n 5 "$tmp/run/worker-0.log")"
"$bin/dl-plan" calibrate --seconds 0.05 --fit-run "$tmp/run" -o "$tmp/fitted.yaml" 2>"$tmp/fit.log" ||
  fail "dl-plan calibrate --fit-run: $(cat "$tmp/fit.log")"
grep -qE "^  $tmp/run: [0-9.]+ ms against [0-9.]+ ms" "$tmp/fit.log" || fail "no predicted step: $(cat "$tmp/fit.log")"
grep -q "no run exchanged with servers on loopback" "$tmp/fit.log" || fail "a standalone run fitted the bandwidth: $(cat "$tmp/fit.log")"
"$bin/dl-plan" "${cnn[@]}" --cluster "$tmp/fitted.yaml" -o "$tmp/refit.json" || fail "dl-plan with the fitted profile"
python3 - "$tmp/fitted.yaml" "$tmp/refit.json" "$tmp/run/worker-0.jsonl" <<'PY' || fail "the fit does not give the measured times"
import json, sys, yaml
rates = yaml.safe_load(open(sys.argv[1]))["layer_gflops"]
planned = {l["name"]: l["compute_seconds"] for l in json.load(open(sys.argv[2]))["planner"]["layers"]}
done = [json.loads(l) for l in open(sys.argv[3]) if '"done"' in l][-1]
measured, modelled = {}, {}
for l in done["layers"]:
    if l["type"] in rates and l["layer"] in planned and planned[l["layer"]] > 0:
        measured[l["type"]] = measured.get(l["type"], 0) + (l["forward_s"] + l["backward_s"]) / done["layer_steps"]
        modelled[l["type"]] = modelled.get(l["type"], 0) + planned[l["layer"]]
assert {"convolution", "pooling", "fully_connected"} <= set(measured), (rates, measured)
for t in measured:  # to the 6 digits the profile writes
    assert abs(modelled[t] / measured[t] - 1) < 1e-4, (t, modelled[t], measured[t])
PY
cp -r "$tmp/run" "$tmp/bad-run"
# fit_refused PATTERN SED: the run's records edited by SED are refused, naming PATTERN.
fit_refused() {
  sed -E "$2" "$tmp/run/worker-0.jsonl" >"$tmp/bad-run/worker-0.jsonl"
  expect_failure 1 "$1" "$bin/dl-plan" calibrate --seconds 0.01 --fit-run "$tmp/bad-run"
}
fit_refused "worker-0.jsonl:[0-9]+: layer '[a-z0-9_]+': 'forward_s' is \"x\", not a number from 0" \
  's/"forward_s":[^,]*,/"forward_s":"x",/'
fit_refused "'forward_s' is -1, not a number from 0" 's/"forward_s":[^,]*,/"forward_s":-1,/'
fit_refused "'layer_steps' is missing" 's/"layer_steps":[0-9]+,//'
fit_refused "'compute_threads' is 2.5, not a count from 1" 's/"compute_threads":[0-9]+/"compute_threads":2.5/'
fit_refused "layers fit a rate of .* outside what a profile holds" \
  's/"forward_s":[^,]*,/"forward_s":1e-300,/g; s/"backward_s":[^,]*,/"backward_s":0,/g'
printf '{"event":"done",%*s\n' 20000000 "" >"$tmp/bad-run/worker-0.jsonl"
expect_failure 1 "worker-0.jsonl:1: a line longer than [0-9]+ bytes" \
  "$bin/dl-plan" calibrate --seconds 0.01 --fit-run "$tmp/bad-run"
cp "$tmp/run/worker-0.jsonl" "$tmp/bad-run/worker-0.jsonl"
rm "$tmp/bad-run/plan.json"
expect_failure 1 "bad-run/plan.json" "$bin/dl-plan" calibrate --seconds 0.01 --fit-run "$tmp/bad-run"
"$bin/dl-plan" "$root/configs/fashion-mlp.yaml" --set cluster.nworkers_per_group=1 -o "$tmp/bad-run/plan.json" ||
  fail "dl-plan of the MLP"
cp "$tmp/run/worker-0.jsonl" "$tmp/bad-run/worker-0.jsonl"
expect_failure 1 "has no layer '[a-z0-9_]+': the records are not of this plan's run" \
  "$bin/dl-plan" calibrate --seconds 0.01 --fit-run "$tmp/bad-run"
"$bin/dl-plan" "$root/configs/fashion-cnn.yaml" --set cluster.nworkers_per_group=2 --group-size 2 --strategy model \
  -o "$tmp/bad-run/plan.json" || fail "dl-plan of a group of two"
expect_failure 1 "its workers exchange inside each step" "$bin/dl-plan" calibrate --seconds 0.01 --fit-run "$tmp/bad-run"
ok "calibrate --fit-run fits each layer type's rate to a run's layer times, and names a bad run"

# A run that exchanged with its server on loopback fits the bandwidth too. The
# same run's records with steps 10 ms longer than its layers took fit a link
# inside the range searched, at which the predicted step is the recorded one.
SHOAL_BIN=$bin "$root/scripts/train-local.sh" --run-dir "$tmp/mlp-run" --no-eval "$root/configs/fashion-mlp.yaml" \
  cluster.nworkers_per_group=1 train.steps=40 "data.shards=$fashion" >/dev/null 2>"$tmp/mlp-run.log" ||
  fail "the MLP run: $(tail -n 5 "$tmp/mlp-run.log")"
"$bin/dl-plan" calibrate --seconds 0.05 --fit-run "$tmp/mlp-run" -o "$tmp/fitted-net.yaml" 2>"$tmp/fit-net.log" ||
  fail "dl-plan calibrate with an exchanging run: $(cat "$tmp/fit-net.log")"
grep -qE "loopback bandwidth [0-9.]+ Gbit/s, (fitted to the runs' steps|the end of the range searched)" \
  "$tmp/fit-net.log" || fail "the bandwidth was not fitted: $(cat "$tmp/fit-net.log")"
cp -r "$tmp/mlp-run" "$tmp/slow-run"
python3 - "$tmp/slow-run/worker-0.jsonl" <<'PY'
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
for r in records:
    if r.get("event") == "done":
        layers_ms = sum(l["forward_s"] + l["backward_s"] for l in r["layers"]) / r["layer_steps"] * 1e3
        r["ms_per_step_median"] = layers_ms + 10
open(sys.argv[1], "w").writelines(json.dumps(r) + "\n" for r in records)
PY
"$bin/dl-plan" calibrate --seconds 0.05 --fit-run "$tmp/slow-run" -o "$tmp/fitted-slow.yaml" 2>"$tmp/fit-slow.log" ||
  fail "dl-plan calibrate with slower steps: $(cat "$tmp/fit-slow.log")"
grep -qE "loopback bandwidth [0-9.]+ Gbit/s, fitted to the runs' steps" "$tmp/fit-slow.log" &&
  grep -qE "^  $tmp/slow-run: [0-9.]+ ms against [0-9.]+ ms \([+-]0\.[0-9]%\)" "$tmp/fit-slow.log" ||
  fail "the predicted step is not the recorded one: $(cat "$tmp/fit-slow.log")"
ok "calibrate --fit-run fits a loopback profile's bandwidth to runs that exchanged, not to a standalone run"

# Two peers measured at once, as a node's NIC is; a peer that is not there is named.
port=$(fresh_port)
"$bin/dl-plan" calibrate --serve "tcp://127.0.0.1:$port" --serve-seconds 30 &
first=$!
"$bin/dl-plan" calibrate --serve "tcp://127.0.0.1:$((port + 1))" --serve-seconds 30 &
second=$!
for p in "$port" "$((port + 1))"; do  # until both listen
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && break; sleep 0.1; done
done
kill -0 "$first" "$second" || fail "a calibration peer did not start (ports $port, $((port + 1)))"
"$bin/dl-plan" calibrate --seconds 0.05 --peer "tcp://127.0.0.1:$port,tcp://127.0.0.1:$((port + 1))" \
  -o "$tmp/peers.yaml" || fail "dl-plan calibrate against two peers"
kill "$first" "$second" 2>/dev/null || true
wait "$first" "$second" 2>/dev/null || true
python3 -c "import sys, yaml; p = yaml.safe_load(open(sys.argv[1])); assert p['bandwidth_gbps'] > 0 and p['latency_us'] > 0, p" \
  "$tmp/peers.yaml" || fail "the two-peer profile has no network: $(cat "$tmp/peers.yaml")"
expect_failure 1 "cannot reach the calibration peer 'tcp://127.0.0.1:$port'" \
  "$bin/dl-plan" calibrate --seconds 0.01 --peer "tcp://127.0.0.1:$port"
ok "dl-plan calibrate measures several peers at once, and names one it cannot reach"

printf 'name: bad\nbandwidth_gbps: 0\nlatency_us: 10\ngflops_per_worker: 5\n' >"$tmp/zero.yaml"
expect_failure 1 "zero.yaml:2:[0-9]+: cluster profile: field 'bandwidth_gbps' must be positive \(1e-6 to 1e9\), got 0" \
  "$bin/dl-plan" "$root/configs/fashion-mlp.yaml" --cluster "$tmp/zero.yaml"
ok "a profile with zero bandwidth is refused, naming the file, line and field"
expect_failure 1 "65 workers but a step's mini-batch has 64 records" \
  "$bin/dl-plan" "$root/configs/fashion-mlp.yaml" --workers 65
ok "more workers than records in a batch is refused"
sed 's/{name: data, type: data, shape: \[1, 28, 28\]}/{name: data, type: data, shape: [1, 28, 28], partition_dim: 1}/' \
  "$root/configs/fashion-mlp.yaml" >"$tmp/override.yaml"
expect_failure 1 "layer 'data': partition_dim 1 cannot be honoured" "$bin/dl-plan" "$tmp/override.yaml"
ok "an override that cannot be honoured is refused"
expect_failure 2 "" "$bin/dl-plan" "$root/configs/fashion-mlp.yaml" --strategy fastest
expect_failure 2 "not expected" "$bin/dl-plan" calibrate "$root/configs/fashion-mlp.yaml"
ok "usage errors exit 2"

"$bin/dl-plan" "$root/configs/models/alexnet.yaml" --workers 16 -o "$tmp/alexnet16.json" || fail "dl-plan --workers 16"
python3 - "$tmp/alexnet16.json" <<'PY' || fail "--workers 16 did not write a plan of 16 workers sharing the step"
import json, sys
p = json.load(open(sys.argv[1]))
assert len(p["workers"]) == 16 and p["cluster"]["workers"] == 16, p["cluster"]
assert p["job"]["train"]["batch_size"] == 16, p["job"]["train"]  # 8 x 32 records over 16
PY
"$bin/dl-plan" check "$tmp/alexnet16.json" >/dev/null || fail "the 16-worker plan does not load"
ok "--workers N writes the job on N workers, the step's records shared"

python3 "$root/scripts/doc-figures.py" --check "$bin" || fail "the docs quote figures dl-plan no longer gives"
ok "the figures README.md and docs/planner.md quote are what dl-plan says"
