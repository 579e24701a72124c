#!/usr/bin/env bash
# Updaters beyond momentum, end to end: the Fashion-MNIST MLP trained briefly
# with Adam and a warm-up through scripts/train-local.sh learns, its
# checkpoints carry Adam's two buffers for every parameter, and dl-ckpt
# exports them on request.
. "$(dirname "$0")/lib.sh"

# 300 BSP steps of 2 workers x 32 records, Adam at 0.001 warming up over 50
# updates: test accuracy 0.8244 when this test was written (a deterministic
# run; other CPUs may round differently, hence the margin). Momentum SGD, the
# file's own updater, reaches 0.79 in these steps and plain SGD at 0.001 0.18.
bound=0.80
run=$tmp/run
SHOAL_BIN=$bin RUN_DIR=$run BASE_PORT=$(fresh_port) "$root/scripts/train-local.sh" \
  "$root/configs/fashion-mlp.yaml" train.updater=adam train.learning_rate=0.001 \
  train.lr_schedule.warmup_steps=50 train.steps=300 data.shards="$(shards_for 2)" \
  >"$tmp/out" 2>"$tmp/err" || fail "train-local failed: $(cat "$tmp/err")"
accuracy=$(field "$tmp/out" "done" "r['test_accuracy']")
python3 -c "import sys; sys.exit(0 if $accuracy >= $bound else 1)" ||
  fail "Adam reached test accuracy $accuracy, want >= $bound"
ok "Adam with a warm-up trains the MLP to test accuracy $accuracy (>= $bound) in 300 steps"

"$bin/dl-ckpt" inspect "$run/ckpt" >"$tmp/inspect.json" || fail "dl-ckpt inspect failed"
python3 - "$tmp/inspect.json" <<'PY' || fail "checkpoint: $(head -c 2000 "$tmp/inspect.json")"
import json, sys
[c] = json.load(open(sys.argv[1]))
assert c["step"] == 300, c["step"]
t = {x["name"]: x for x in c["tensors"]}
params = [f"fc{i}.{p}" for i in (1, 2, 3) for p in ("weight", "bias")]
want = {p + s for p in params for s in ("", "@exp_avg", "@exp_avg_sq")}
assert set(t) == want, sorted(set(t) ^ want)
for p in params:
    assert t[p + "@exp_avg"]["role"] == "exp_avg" and t[p + "@exp_avg_sq"]["role"] == "exp_avg_sq"
    assert t[p + "@exp_avg_sq"]["count"] == t[p]["count"]
    assert t[p + "@exp_avg_sq"]["l2_norm"] > 0, p  # trained, not the zeros it started as
PY
ok "the checkpoint holds each parameter's value, exp_avg and exp_avg_sq"

"$bin/dl-ckpt" export "$run/ckpt" -o "$tmp/values.safetensors" >"$tmp/values.json" || fail "export failed"
"$bin/dl-ckpt" export "$run/ckpt" -o "$tmp/state.safetensors" --with-state >"$tmp/state.json" ||
  fail "export --with-state failed"
python3 - "$tmp/values.json" "$tmp/state.json" <<'PY' || fail "exports: $(cat "$tmp/values.json" "$tmp/state.json")"
import json, sys
values, state = (sorted(t["name"] for t in json.load(open(f))["tensors"]) for f in sys.argv[1:])
assert len(values) == 6 and not any("@" in n for n in values), values
assert len(state) == 18 and "fc1.weight@exp_avg_sq" in state, state
PY
ok "export writes values only, and Adam's state with --with-state"

expect_failure 1 "section 'train': field 'updater' is 'adamw', expected one of: sgd, momentum, nesterov, adagrad, rmsprop, adam" \
  "$bin/dl-plan" "$root/configs/fashion-mlp.yaml" --set train.updater=adamw -o "$tmp/plan.json"
ok "an unknown updater is refused naming the field and the known updaters"
