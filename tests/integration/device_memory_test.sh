#!/usr/bin/env bash
# GeePS's memory manager (lib/device/) under train.device_memory_mb, on the
# host-backed device (a budget of host memory, copies on a thread of its own):
# each model trains under a budget with parameters bit-identical to the run
# without one (the feed-forward MLP and CNN, the GRU char-RNN, the RBM by
# contrastive divergence), the device's peak never passes the budget, and the
# bytes copied are what the placement plan predicts, step for step. A deep MLP
# trains with its step's data 3x and more over the budget. A budget below
# twice the peak is refused by dl-plan, naming the worker and the minimum.
. "$(dirname "$0")/lib.sh"

steps=12
run() {  # run NAME JOB SHARDS [OVERRIDE...]: 1 worker and 1 server, BSP, $steps steps
  local name=$1 dir=$tmp/$1 job=$2 shards=$3 port
  shift 3
  local sets=()
  for o in "$@"; do sets+=(--set "$o"); done
  port=$(fresh_port)
  mkdir -p "$dir"
  "$bin/dl-plan" "$job" --strategy data --base-port "$port" -o "$dir/plan.json" "${sets[@]}" \
    --set cluster.nworkers_per_group=1 --set train.steps=$steps --set train.display_every=$steps >/dev/null
  "$bin/dl-server" --plan "$dir/plan.json" --checkpoint-dir "$dir/ckpt" >"$dir/server.jsonl" 2>"$dir/server.log" &
  local server=$!
  "$bin/dl-worker" --plan "$dir/plan.json" --id 0 --shards "$shards" --no-eval >"$dir/w0.jsonl" 2>"$dir/w0.log" ||
    fail "$name: the worker failed: $(cat "$dir/w0.log")"
  wait "$server" || fail "$name: the server failed: $(cat "$dir/server.log")"
}

# The smallest budget a job takes: what dl-plan's refusal of a tiny one names
# (it builds the worker's step and runs Algorithm 1 as the worker will).
minimum() {  # minimum JOB SHARDS [OVERRIDE...]
  local dir=$tmp/minimum job=$1
  shift 2
  local sets=()
  for o in "$@"; do sets+=(--set "$o"); done
  mkdir -p "$dir"
  expect_failure 1 "worker 0: train.device_memory_mb: a budget of 0.00 MiB is below twice the step's peak" \
    "$bin/dl-plan" "$job" --strategy data -o "$dir/plan.json" "${sets[@]}" --set cluster.nworkers_per_group=1 \
    --set train.steps=$steps --set train.device_memory_mb=0.001
  [[ ! -e "$dir/plan.json" ]] || fail "dl-plan wrote a plan whose step does not fit"
  sed -nE 's/.*needs at least ([0-9]+) bytes.*/\1/p' "$tmp/err"
}

mib() { python3 -c "print($1 / 1048576 + 1e-6)"; }  # bytes as train.device_memory_mb

# check NAME BASE: bit-identical to run BASE; peak within the budget; copies as planned.
check() {
  "$bin/dl-ckpt" diff "$(final_ckpt "$tmp/$2")" "$(final_ckpt "$tmp/$1")" >"$tmp/$1/diff.json"
  python3 - "$tmp/$1/diff.json" "$tmp/$1/w0.jsonl" "$tmp/$2/w0.jsonl" "$steps" <<'PY' || fail "$1: $(cat "$tmp/$1/diff.json")"
import json, sys
diff = json.load(open(sys.argv[1]))
done = [json.loads(l) for l in open(sys.argv[2]) if '"done"' in l][-1]
base = [json.loads(l) for l in open(sys.argv[3]) if '"done"' in l][-1]
steps = int(sys.argv[4])
assert diff["step_a"] == diff["step_b"] == steps and not diff["only_in_a"] and not diff["only_in_b"], diff
assert diff["max_abs"] == 0.0, f"parameters differ from the unbounded run: max_abs {diff['max_abs']}"
m = done["device_memory"]
assert m["steps"] == steps, m
assert 0 < m["peak_bytes"] <= m["budget_bytes"], m
assert m["pinned_bytes"] + m["pool_bytes"] <= m["budget_bytes"], m
assert m["bytes_to_device"] == steps * m["planned_bytes_to_device_per_step"], m
assert m["bytes_to_host"] == steps * m["planned_bytes_to_host_per_step"], m
mib = 1 << 20
print(f"  budget {m['budget_bytes'] / mib:.2f} MiB, step data {m['step_bytes'] / mib:.2f} MiB "
      f"({m['step_bytes'] / m['budget_bytes']:.1f}x), peak {m['peak_bytes'] / mib:.2f} MiB, "
      f"pinned {m['pinned_bytes'] / mib:.2f} MiB, pool {m['pool_bytes'] / mib:.2f} MiB, "
      f"per step {m['planned_bytes_to_device_per_step'] / mib:.2f} MiB in and "
      f"{m['planned_bytes_to_host_per_step'] / mib:.2f} MiB out; "
      f"{done['ms_per_step_median']:.1f} ms a step against {base['ms_per_step_median']:.1f} unbounded")
PY
}

# budgets NAME JOB SHARDS [OVERRIDE...]: the model at the smallest budget it
# takes (everything it can swapped) and halfway from there to its step's data.
budgets() {
  local name=$1 job=$2 shards=$3 least mid
  shift 3
  least=$(minimum "$job" "$shards" "$@")
  [[ -n "$least" ]] || fail "$name: the refusal names no minimum: $(cat "$tmp/err")"
  run "$name-base" "$job" "$shards" "$@"
  run "$name-least" "$job" "$shards" "$@" train.device_memory_mb="$(mib "$least")"
  echo "$name, the smallest budget:"
  check "$name-least" "$name-base"
  # (A net whose one pass touches all its data, as an RBM's, has no halfway.)
  mid=$(field "$tmp/$name-least/w0.jsonl" "done" "(r['device_memory']['budget_bytes'] + r['device_memory']['step_bytes']) // 2")
  if ((mid > least)); then
    run "$name-mid" "$job" "$shards" "$@" train.device_memory_mb="$(mib "$mid")"
    echo "$name, halfway:"
    check "$name-mid" "$name-base"
  fi
  ok "$name trains bit-identically at the smallest budget it takes$( ((mid > least)) && echo " and halfway to its step's data")"
}

fashion=$(shards_for 1)

# A deep MLP: twelve 512-unit layers, whose step holds far more than any one pass.
deep_mlp_job "$tmp/deep.yaml"
budgets deep-mlp "$tmp/deep.yaml" "$fashion"
over=$(field "$tmp/deep-mlp-least/w0.jsonl" "done" "r['device_memory']['step_bytes'] / r['device_memory']['budget_bytes']")
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 3 else 1)" "$over" ||
  fail "the deep MLP's step data is only ${over}x its smallest budget"
ok "the deep MLP's step data is ${over}x the budget it trained under"

# Each layer's passes take every buffer as given (none kept from forward for
# backward): the CNN on oneDNN and on im2col, with overlap off too.
budgets cnn "$root/configs/fashion-cnn.yaml" "$fashion"
SHOAL_ONEDNN=0 budgets cnn-im2col "$root/configs/fashion-cnn.yaml" "$fashion" train.overlap=false

# The GRU char-RNN (embedding, GRU over 16 steps, per-step fully connected, sequence loss).
find "$root/lib" -name '*.cpp' | LC_ALL=C sort | xargs cat >"$tmp/sources.txt"
head -c 200000 "$tmp/sources.txt" >"$tmp/corpus.txt"
"$bin/dl-shard" --text "$tmp/corpus.txt" --window 17 --out "$tmp/text" --shards 1 >/dev/null
vocab=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['classes'])" "$tmp/text/manifest.json")
cat >"$tmp/char-rnn.yaml" <<YAML
model:
  layers:
    - {name: data, type: data, shape: [17]}
    - {name: embed, type: embedding, srclayers: data, vocab: $vocab, num_output: 32, steps: 16}
    - {name: gru, type: gru, srclayers: embed, num_output: 64}
    - {name: logits, type: fully_connected, srclayers: gru, num_output: $vocab, axis: 1}
    - {name: loss, type: softmax_loss, srclayers: [logits, data]}
train: {batch_size: 16, updater: adam, learning_rate: 0.005, clip_norm: 5}
YAML
budgets char-rnn "$tmp/char-rnn.yaml" "$tmp/text"

# The RBM by contrastive divergence (its Gibbs draws keyed by record and step).
sed 's/num_output: 1000/num_output: 64/' "$root/configs/fashion-rbm1.yaml" >"$tmp/rbm.yaml"
budgets rbm "$tmp/rbm.yaml" "$fashion"

# The comparison can fail: another seed's parameters differ from the base run's.
run other-seed "$tmp/deep.yaml" "$fashion" train.seed=7 train.device_memory_mb=40
"$bin/dl-ckpt" diff "$(final_ckpt "$tmp/deep-mlp-base")" "$(final_ckpt "$tmp/other-seed")" >"$tmp/other.json"
python3 -c "import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))['max_abs'] > 0 else 1)" "$tmp/other.json" ||
  fail "the bit-for-bit comparison cannot tell runs apart"
ok "another seed under a budget differs from the base run"

# dl-plan checks each rank of a model-parallel group's step the same way.
hybrid=("$bin/dl-plan" "$root/configs/fashion-mlp.yaml" --strategy model --group-size 2 -o "$tmp/hybrid.json")
expect_failure 1 "worker 0: train.device_memory_mb: a budget of 0.01 MiB is below twice the step's peak .* at 'fc1 backward'" \
  "${hybrid[@]}" --set train.device_memory_mb=0.01
[[ ! -e "$tmp/hybrid.json" ]] || fail "dl-plan wrote a plan whose step does not fit"
"${hybrid[@]}" --set train.device_memory_mb=100 || fail "dl-plan refused a group's step that fits 100 MiB: $(cat "$tmp/err")"
ok "dl-plan refuses a budget a model-parallel group's step does not fit, naming the worker and the pass, and plans one that fits"

# train.device: cuda. dl-plan refuses a layer with no GPU form, naming it;
# where no GPU can be opened (no CUDA in the build, no driver, no GPU), the
# worker says so, naming the GPU, before it trains (the GPU runs themselves
# are tests/gpu/, skipped without a GPU).
# An LRN of an even size is not cuDNN's (its window leans the other way).
sed 's/type: relu, srclayers: conv1/type: lrn, local_size: 4, srclayers: conv1/' "$root/configs/fashion-cnn.yaml" \
  >"$tmp/lrn.yaml"
expect_failure 1 "worker 0: train.device is cuda, but layer 'relu1' \(lrn\) has no GPU form" \
  "$bin/dl-plan" "$tmp/lrn.yaml" --strategy data --set train.device=cuda -o "$tmp/lrn.json"
[[ ! -e "$tmp/lrn.json" ]] || fail "dl-plan wrote a plan whose layer cannot run on the GPU"
if ! nvidia-smi -L >/dev/null 2>&1; then
  "$bin/dl-plan" "$root/configs/fashion-mlp.yaml" --strategy data --set cluster.nworkers_per_group=1 \
    --set train.device=cuda:99 --set train.steps=2 -o "$tmp/cuda.json" >/dev/null
  expect_failure 1 "worker 0: cuda:99: " \
    "$bin/dl-worker" --plan "$tmp/cuda.json" --id 0 --standalone --no-eval --shards "$fashion"
  ok "without a GPU, a worker asked to train on cuda:99 refuses to start, naming it"
fi
ok "dl-plan refuses a layer with no GPU form under train.device: cuda, naming it"
