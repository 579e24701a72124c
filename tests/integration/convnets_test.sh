#!/usr/bin/env bash
# The convnets of the papers train from image data: SINGA's CIFAR-10 net
# (pooling rounding up, average pooling, LRN) and ResNet-20 (batch norm,
# residual sums, global average pooling). Under BSP a ResNet's running
# averages are the servers' as its weights are: a worker killed mid-run
# leaves the final checkpoint bit for bit the undisturbed run's.
. "$(dirname "$0")/lib.sh"

/usr/bin/python3 "$root/scripts/make-image-data.py" cifar "$tmp/cifar" --records 100 >/dev/null ||
  fail "make-image-data.py cifar"
for n in 1 2; do
  "$bin/dl-shard" --cifar "$tmp/cifar" --out "$tmp/shards-$n" --shards "$n" >/dev/null || fail "dl-shard --cifar ($n)"
done

# first_and_last_loss JSONL: the first and the last step record's loss.
first_and_last_loss() {
  python3 - "$1" <<'PY'
import json, sys
losses = [r["loss"] for r in map(json.loads, open(sys.argv[1])) if r.get("event") == "step"]
print(losses[0], losses[-1])
PY
}

# --- SINGA's CIFAR-10 net, one worker ---
"$bin/dl-plan" "$root/configs/cifar10-singa.yaml" --set train.steps=40 --set train.batch_size=32 \
  --set train.learning_rate=0.01 --set train.display_every=5 --set data.shards="$tmp/shards-1" \
  -o "$tmp/singa.json" >/dev/null || fail "dl-plan cifar10-singa"
jq -e '[.layers[] | select(.name == "ip1")][0].params == 10250' "$tmp/singa.json" >/dev/null ||
  fail "SINGA's net is not 64x4x4 -> 10 at its top (pooling must round up): $(jq -c '.layers' "$tmp/singa.json")"
"$bin/dl-worker" --plan "$tmp/singa.json" --standalone --shards "$tmp/shards-1" >"$tmp/singa.jsonl" \
  2>"$tmp/singa.log" || fail "SINGA's CIFAR net did not train: $(tail -5 "$tmp/singa.log")"
read -r first last < <(first_and_last_loss "$tmp/singa.jsonl")
python3 -c "import sys; sys.exit(0 if float(sys.argv[2]) < 0.8 * float(sys.argv[1]) else 1)" "$first" "$last" ||
  fail "SINGA's CIFAR net's loss went from $first to $last in 40 steps"
ok "SINGA's CIFAR-10 net (conv-pool-LRN x3, pools rounding up) trains: loss $first -> $last in 40 steps"

# --- AlexNet (LRN) and GoogLeNet as published (LRN, pools rounding up, padded
# pool branches, global average pooling) at their reduced sizes, from JPEGs ---
/usr/bin/python3 "$root/scripts/make-image-data.py" synthetic "$tmp/syn" --classes 4 --per-class 32 \
  --test-per-class 2 --min-side 64 --max-side 96 --threads 2 >/dev/null || fail "make-image-data.py synthetic"
for net in alexnet-67 googlenet-64; do
  side=${net##*-}
  "$bin/dl-shard" --images "$tmp/syn/train" --test-dir "$tmp/syn/val" --resize 72 --center-crop "$side" \
    --out "$tmp/syn-$side" --shards 1 >/dev/null || fail "dl-shard --images ($side)"
  "$bin/dl-plan" "$root/configs/$net.yaml" --set train.steps=24 --set train.batch_size=16 --set train.display_every=4 \
    --set data.shards="$tmp/syn-$side" -o "$tmp/$net.json" >/dev/null ||
    fail "dl-plan $net"
  "$bin/dl-worker" --plan "$tmp/$net.json" --standalone --no-eval --shards "$tmp/syn-$side" >"$tmp/$net.jsonl" \
    2>"$tmp/$net.log" || fail "$net did not train: $(tail -5 "$tmp/$net.log")"
  read -r first last < <(first_and_last_loss "$tmp/$net.jsonl")
  python3 -c "import sys; sys.exit(0 if float(sys.argv[2]) < 0.95 * float(sys.argv[1]) else 1)" "$first" "$last" ||
    fail "$net's loss went from $first to $last in 24 steps"
  ok "$net trains from JPEGs: loss $first -> $last in 24 steps"
done

# --- ResNet-20 under BSP, 2 workers: undisturbed, and a worker killed ---
train() {  # train NAME: 2 workers x 16, 40 steps, a checkpoint every 10, in the background
  SHOAL_BIN=$bin RUN_DIR=$tmp/$1 BASE_PORT=$(fresh_port) "$root/scripts/train-local.sh" \
    "$root/configs/resnet20.yaml" cluster.nworkers_per_group=2 train.batch_size=16 train.steps=40 \
    train.checkpoint_every=10 train.display_every=5 train.eval_every=0 \
    "train.lr_schedule={kind: cosine, every: 40}" data.shards="$tmp/shards-2" >"$tmp/$1.out" 2>"$tmp/$1.err" &
}
train calm
wait $! || fail "ResNet-20 under BSP failed: $(cat "$tmp/calm.err")$(run_logs "$tmp/calm")"
read -r first last < <(first_and_last_loss "$tmp/calm/worker-0.jsonl")
python3 -c "import sys; sys.exit(0 if float(sys.argv[2]) < 0.8 * float(sys.argv[1]) else 1)" "$first" "$last" ||
  fail "ResNet-20's loss went from $first to $last in 40 steps"
final=$(ls "$tmp"/calm/ckpt/*-0000000040.ckpt)
"$bin/dl-ckpt" inspect "$final" --json >"$tmp/inspect.json" || fail "dl-ckpt inspect $final"
jq -e '[.[0].tensors[] | select(.param == "bn1.running_var" and .role == "value")] | length == 1' \
  "$tmp/inspect.json" >/dev/null || fail "the checkpoint has no bn1.running_var: $(head -c 600 "$tmp/inspect.json")"
ok "ResNet-20 (batch norm, residual sums) trains under BSP 2 x 16: loss $first -> $last; checkpoints keep the running averages"

# Its export, running averages included, is PyTorch's ResNet-20 and evaluates as shoal's did.
"$bin/dl-ckpt" export "$tmp/calm/ckpt" -o "$tmp/resnet20.npz" >/dev/null || fail "dl-ckpt export"
ours=$(field "$tmp/calm/worker-0.jsonl" "done" "r['test_accuracy']")
theirs=$(/usr/bin/python3 "$root/tests/integration/torch_convnet_check.py" "$root/configs/resnet20.yaml" \
  "$tmp/resnet20.npz" "$tmp/cifar/test_batch.bin" "$tmp/shards-2/manifest.json" | jq -r .test_accuracy) ||
  fail "the export did not load into PyTorch's ResNet-20"
python3 -c "import sys; sys.exit(0 if abs(float(sys.argv[1]) - float(sys.argv[2])) < 5e-5 else 1)" "$ours" "$theirs" ||
  fail "PyTorch evaluates the export to $theirs, shoal to $ours"
ok "the export loads into PyTorch's ResNet-20 (bench/peers/shoal_net.py) and evaluates to shoal's test accuracy, $ours"

train worker-killed
runner=$!
kill_worker_at "$tmp/worker-killed" 20 1
wait "$runner" || fail "the run did not survive a worker's death: $(cat "$tmp/worker-killed.err")"
grep -q "worker 1 died (exit 137); restarting it" "$tmp/worker-killed.err" ||
  fail "no restart logged: $(cat "$tmp/worker-killed.err")"
"$bin/dl-ckpt" diff "$final" "$(ls "$tmp"/worker-killed/ckpt/*-0000000040.ckpt)" >"$tmp/diff.json" ||
  fail "dl-ckpt diff"
jq -e '.max_abs == 0' "$tmp/diff.json" >/dev/null ||
  fail "after the kill the parameters or running averages differ: $(head -c 400 "$tmp/diff.json")"
ok "kill -9 of a ResNet-20 worker at step ~20: it rejoined, and every weight and running average ends bit for bit"
