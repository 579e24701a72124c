#!/usr/bin/env bash
# GPU workers (train.device: cuda) train as the CPU ones do: the MLP and the
# CNN, two workers under BSP, reach the CPU run's test accuracy (within a
# point) and loss; the convnets (SINGA's CIFAR-10 net: LRN, pools rounding
# up; ResNet-20: batch norm, residual sums, global average pooling,
# convolutions without a bias; AlexNet and GoogLeNet at their reduced sizes:
# dropout, concatenation) the CPU run's loss; the GPU's memory manager under a budget
# a third of the step's data gives parameters bit-identical to the GPU's
# unbounded run, its peak within the budget and its copies as planned.
# Exits 77 (ctest: skipped) on a machine without a GPU or a build without CUDA.
. "$(dirname "$0")/../integration/lib.sh"

[[ -e "$bin/libshoal_cuda.so" ]] || { echo "skipped: this build has no CUDA ops"; exit 77; }
nvidia-smi -L >/dev/null 2>&1 || { echo "skipped: no GPU on this machine"; exit 77; }

steps=${GPU_TRAIN_STEPS:-300}
# run NAME JOB WORKERS [OVERRIDE...]: WORKERS workers and 1 server, BSP, $steps
# steps, on Fashion-MNIST or the shards in $SHARDS
run() {
  local name=$1 dir=$tmp/$1 job=$2 workers=$3 port pids=()
  shift 3
  local sets=()
  for o in "$@"; do sets+=(--set "$o"); done
  port=$(fresh_port)
  mkdir -p "$dir"
  "$bin/dl-plan" "$job" --strategy data --workers "$workers" --servers 1 --base-port "$port" -o "$dir/plan.json" \
    --set "train.steps=$steps" --set train.display_every=50 "${sets[@]}" >/dev/null
  "$bin/dl-server" --plan "$dir/plan.json" --checkpoint-dir "$dir/ckpt" >"$dir/server.jsonl" 2>"$dir/server.log" &
  local server=$!
  for ((w = 0; w < workers; ++w)); do
    # shellcheck disable=SC2046  # an optional flag: no word or one
    "$bin/dl-worker" --plan "$dir/plan.json" --id $w --shards "${SHARDS:-$(shards_for "$workers")}" \
      $( ((w > 0)) && echo --no-eval) >"$dir/w$w.jsonl" 2>"$dir/w$w.log" &
    pids+=($!)
  done
  for ((w = 0; w < workers; ++w)); do
    wait "${pids[$w]}" || fail "$name: worker $w failed: $(cat "$dir/w$w.log")"
  done
  wait "$server" || fail "$name: the server failed: $(cat "$dir/server.log")"
}

# compare NAME: the GPU run's accuracy and final loss against the CPU run's.
compare() {
  python3 - "$tmp/$1-cpu/w0.jsonl" "$tmp/$1-gpu/w0.jsonl" "$1" <<'PY'
import json, sys
def done(path):
    return [r for r in map(json.loads, open(path)) if r.get("event") == "done"][-1]
cpu, gpu = done(sys.argv[1]), done(sys.argv[2])
cpu_acc, gpu_acc = cpu["test_accuracy"], gpu["test_accuracy"]
assert gpu["device_memory"]["device"] == "cuda:0", gpu.get("device_memory")
print(f"  {sys.argv[3]}: test accuracy cpu {cpu_acc:.4f} gpu {gpu_acc:.4f}; final loss cpu {cpu['final_loss']:.4f} "
      f"gpu {gpu['final_loss']:.4f}; {cpu['ms_per_step_median']:.2f} ms a step on the CPU, "
      f"{gpu['ms_per_step_median']:.2f} on the GPU")
assert abs(cpu_acc - gpu_acc) <= 0.01, "accuracies differ by more than a point"
assert abs(cpu["final_loss"] - gpu["final_loss"]) <= 0.1 * cpu["final_loss"] + 0.02, "final losses differ"
PY
}

for model in mlp cnn; do
  run "$model-cpu" "$root/configs/fashion-$model.yaml" 2
  run "$model-gpu" "$root/configs/fashion-$model.yaml" 2 train.device=cuda
  compare "$model" || fail "$model: the GPU run is not the CPU run's"
  ok "the $model trains on the GPU under BSP, 2 workers, to the CPU run's accuracy"
done

# The convnets, on CIFAR-10-shaped images and on JPEGs: the GPU run's first
# five steps' losses within a percent of the CPU run's (the same batches and
# dropout masks; later the two runs' rounding, which batch norm magnifies,
# takes them apart), and its mean over the last ten steps under its first.
python3 "$root/scripts/make-image-data.py" cifar "$tmp/cifar" --records 256 >/dev/null || fail "make-image-data.py cifar"
"$bin/dl-shard" --cifar "$tmp/cifar" --out "$tmp/cifar-2" --shards 2 >/dev/null || fail "dl-shard --cifar"
python3 "$root/scripts/make-image-data.py" synthetic "$tmp/syn" --classes 4 --per-class 64 --test-per-class 2 \
  --min-side 64 --max-side 96 >/dev/null || fail "make-image-data.py synthetic"
for side in 64 67; do
  "$bin/dl-shard" --images "$tmp/syn/train" --test-dir "$tmp/syn/val" --resize 72 --center-crop $side \
    --out "$tmp/syn-$side" --shards 2 >/dev/null || fail "dl-shard --images ($side)"
done
steps=40
for net in cifar10-singa:cifar-2:0.8 resnet20:cifar-2:0.8 alexnet-67:syn-67:0.95 googlenet-64:syn-64:0.95; do
  IFS=: read -r net shards learned <<<"$net"
  for where in cpu gpu; do
    # shellcheck disable=SC2046  # an optional override: no word or one
    SHARDS=$tmp/$shards run "$net-$where" "$root/configs/$net.yaml" 2 train.batch_size=16 \
      train.learning_rate=0.01 train.display_every=1 train.eval_every=0 data.shards="$tmp/$shards" \
      $([[ $where == gpu ]] && echo train.device=cuda)
  done
  python3 - "$tmp/$net-cpu/w0.jsonl" "$tmp/$net-gpu/w0.jsonl" "$net" "$learned" <<'PY' ||
import json, sys
def records(path, event):
    return [r for r in map(json.loads, open(path)) if r.get("event") == event]
cpu, gpu = ([r["loss"] for r in records(path, "step")] for path in sys.argv[1:3])
done = records(sys.argv[2], "done")[-1]
assert done["device_memory"]["device"] == "cuda:0", done.get("device_memory")
tail_cpu, tail_gpu = sum(cpu[-10:]) / 10, sum(gpu[-10:]) / 10
print(f"  {sys.argv[3]}: loss {gpu[0]:.4f} -> {tail_gpu:.4f} on the GPU, {cpu[0]:.4f} -> {tail_cpu:.4f} "
      f"on the CPU (the last ten steps' mean); {done['ms_per_step_median']:.2f} ms a step on the GPU")
print("    steps' losses, GPU/CPU:", " ".join(f"{g:.4f}/{c:.4f}" for g, c in zip(gpu[:10], cpu[:10])))
for step, (g, c) in enumerate(zip(gpu[:5], cpu[:5]), 1):
    assert abs(g - c) <= 0.01 * c, f"step {step}'s losses differ"
assert tail_gpu < float(sys.argv[4]) * gpu[0], "the GPU run did not learn"
PY
    fail "$net: the GPU run is not the CPU run's"
  ok "$net trains on the GPU under BSP, 2 workers, to the CPU run's loss"
done

# The memory manager on the GPU: a deep MLP under a budget of a third of its step's data.
deep_mlp_job "$tmp/deep.yaml"
# budgeted NAME JOB BUDGET_MIB: one GPU worker unbounded, then under BUDGET_MIB:
# parameters bit-identical, the peak (cuDNN's workspace included) within the
# budget, the copies as planned.
budgeted() {
  local name=$1 job=$2 budget=$3
  run "$name-budget" "$job" 1 train.device=cuda train.device_memory_mb="$budget"
  "$bin/dl-ckpt" diff "$(final_ckpt "$tmp/$name")" "$(final_ckpt "$tmp/$name-budget")" >"$tmp/$name-diff.json"
  python3 - "$tmp/$name-diff.json" "$tmp/$name-budget/w0.jsonl" "$tmp/$name/w0.jsonl" "$steps" <<'PY' ||
import json, sys
diff = json.load(open(sys.argv[1]))
done = [json.loads(l) for l in open(sys.argv[2]) if '"done"' in l][-1]
base = [json.loads(l) for l in open(sys.argv[3]) if '"done"' in l][-1]
steps = int(sys.argv[4])
assert diff["step_a"] == diff["step_b"] == steps, diff
assert diff["max_abs"] == 0.0, f"parameters differ from the unbounded GPU run: max_abs {diff['max_abs']}"
m = done["device_memory"]
assert m["device"] == "cuda:0", m
assert 0 < m["peak_bytes"] <= m["budget_bytes"], m
assert m["bytes_to_device"] == steps * m["planned_bytes_to_device_per_step"], m
assert m["bytes_to_host"] == steps * m["planned_bytes_to_host_per_step"], m
mib = 1 << 20
print(f"  budget {m['budget_bytes'] / mib:.2f} MiB, step data {m['step_bytes'] / mib:.2f} MiB "
      f"({m['step_bytes'] / m['budget_bytes']:.1f}x), peak {m['peak_bytes'] / mib:.2f} MiB, "
      f"per step {m['planned_bytes_to_device_per_step'] / mib:.2f} MiB in and "
      f"{m['planned_bytes_to_host_per_step'] / mib:.2f} MiB out; "
      f"{done['ms_per_step_median']:.2f} ms a step against {base['ms_per_step_median']:.2f} unbounded")
PY
    fail "$name under a budget: $(cat "$tmp/$name-diff.json")"
}

steps=20
run deep-gpu "$tmp/deep.yaml" 1 train.device=cuda
budgeted deep-gpu "$tmp/deep.yaml" "$(field "$tmp/deep-gpu/w0.jsonl" "done" "r['device_memory']['step_bytes'] / 3 / 1048576")"
over=$(field "$tmp/deep-gpu-budget/w0.jsonl" "done" "r['device_memory']['step_bytes'] / r['device_memory']['budget_bytes']")
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 2.9 else 1)" "$over" ||
  fail "the deep MLP's step data is only ${over}x its budget"
ok "the deep MLP trains on the GPU at a third of its step's data, bit-identical to the unbounded GPU run"

# The CNN (cuDNN's convolutions, their workspace from what the budget leaves)
# at the smallest budget dl-plan takes: twice its peak pass, about its step's
# data, so that the workspace has the least room.
cnn=$root/configs/fashion-cnn.yaml
"$bin/dl-plan" "$cnn" --strategy data --workers 1 --servers 1 --set train.device=cuda \
  --set train.device_memory_mb=0.001 -o "$tmp/never.json" 2>"$tmp/refusal" && fail "dl-plan took a budget of 1 KiB"
least=$(sed -nE 's/.*needs? at least ([0-9]+) bytes.*/\1/p' "$tmp/refusal")
[[ -n "$least" ]] || fail "dl-plan's refusal names no minimum: $(cat "$tmp/refusal")"
run cnn-one "$cnn" 1 train.device=cuda
budgeted cnn-one "$cnn" "$(python3 -c "print($least / 1048576 + 1e-6)")"
ok "the CNN trains on the GPU at the smallest budget it takes, bit-identical to the unbounded GPU run"
