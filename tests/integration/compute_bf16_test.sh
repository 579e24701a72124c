#!/usr/bin/env bash
# train.compute: bf16: the CNN's convolutions and products in bfloat16 with
# float32 sums, on oneDNN's AVX512_BF16 kernels. Trained for the same steps
# on the same records as in float32, it computes other losses (its inputs
# are rounded) and reaches a test accuracy within a point of float32's; the
# rate drops tenfold for the last third so that the end point settles
# (tests/integration/wire_fp16_test.sh says why). A GPU job asking for it is
# refused, and so is a worker whose oneDNN has no bfloat16 kernels, whose
# evaluation of a bf16 run's checkpoint computes in fp32 instead, saying so.
# On a CPU without AVX512_BF16 the training half is skipped.
. "$(dirname "$0")/lib.sh"

steps=400
plan() {  # plan COMPUTE [SETTING...]: the CNN, one worker x 64 hosting its server, to $tmp/COMPUTE.json
  local compute=$1
  shift
  "$bin/dl-plan" "$root/configs/fashion-cnn.yaml" --set cluster.nworkers_per_group=1 --set train.batch_size=64 \
    --set cluster.server_worker_separate=false --base-port "$(fresh_port)" \
    --set train.steps=$steps --set train.display_every=50 --set train.eval_every=0 \
    --set "train.lr_schedule={kind: step, every: 270, gamma: 0.1}" --set train.compute="$compute" "$@" \
    -o "$tmp/$compute.json"
}

expect_failure 1 "field 'compute' is bf16, which runs on the CPU's oneDNN kernels" \
  plan bf16 --set train.device=cuda
plan bf16 >/dev/null
SHOAL_ONEDNN=0 expect_failure 1 "train.compute bf16 needs oneDNN's bfloat16 kernels .* 'off'" \
  "$bin/dl-worker" --plan "$tmp/bf16.json" --standalone --shards "$(shards_for 1)"
ok "bf16 is refused on a GPU and without oneDNN's bfloat16 kernels, naming why"

if ! grep -qw avx512_bf16 /proc/cpuinfo; then
  expect_failure 1 "train.compute bf16 needs oneDNN's bfloat16 kernels" \
    "$bin/dl-worker" --plan "$tmp/bf16.json" --standalone --shards "$(shards_for 1)"
  echo "skipped: this CPU has no AVX512_BF16 (refused, as it should be)"
  exit 77
fi

plan fp32 >/dev/null
for compute in fp32 bf16; do
  "$bin/dl-worker" --plan "$tmp/$compute.json" --id 0 --threads 2 --checkpoint-dir "$tmp/ckpt-$compute" \
    --shards "$(shards_for 1)" >"$tmp/$compute.jsonl" 2>"$tmp/$compute.log" ||
    fail "the $compute run failed: $(tail -n 3 "$tmp/$compute.log")"
done
for onednn in 1 0; do
  SHOAL_ONEDNN=$onednn "$bin/dl-worker" --plan "$tmp/bf16.json" --eval-only "$tmp/ckpt-bf16" \
    --shards "$(shards_for 1)" >"$tmp/eval-$onednn.json" 2>"$tmp/eval-$onednn.log" ||
    fail "evaluating the bf16 run's checkpoint failed (SHOAL_ONEDNN=$onednn): $(cat "$tmp/eval-$onednn.log")"
done
grep -q "the job computes in bf16, for which oneDNN here ('off') has no kernels: evaluating in fp32" \
  "$tmp/eval-0.log" || fail "the fp32 evaluation does not say why: $(cat "$tmp/eval-0.log")"
python3 - "$tmp" <<'PY' || fail "bf16 does not compute in bfloat16, or learns other than fp32"
import json, sys
d = sys.argv[1]
records = {c: list(map(json.loads, open(f"{d}/{c}.jsonl"))) for c in ("fp32", "bf16")}
done = {c: [r for r in rs if r.get("event") == "done"][-1] for c, rs in records.items()}
losses = {c: [r["loss"] for r in rs if r.get("event") == "step"] for c, rs in records.items()}
for c in done:
    assert done[c]["kernels"]["compute"] == c, f"the {c} run says it computed in {done[c]['kernels']['compute']}"
print(f"  losses fp32 {losses['fp32'][:3]}, bf16 {losses['bf16'][:3]}")
assert losses["fp32"][0] != losses["bf16"][0], "bf16's first loss is fp32's: nothing was rounded"
acc = {c: done[c]["test_accuracy"] for c in done}
print(f"  test accuracy: fp32 {acc['fp32']:.4f}, bf16 {acc['bf16']:.4f}")
assert acc["fp32"] >= 0.80, "fp32 did not learn enough for the comparison to mean something"
assert abs(acc["bf16"] - acc["fp32"]) <= 0.01, "accuracy differs by more than a point"
evals = {o: json.loads(open(f"{d}/eval-{o}.json").read()) for o in ("1", "0")}
print(f"  the bf16 checkpoint evaluated in bf16 {evals['1']['test_accuracy']:.4f}, in fp32 {evals['0']['test_accuracy']:.4f}")
assert evals["1"]["compute"] == "bf16" and evals["0"]["compute"] == "fp32", evals
assert evals["1"]["test_accuracy"] == acc["bf16"], "evaluating the final checkpoint in bf16 gives another accuracy"
assert abs(evals["0"]["test_accuracy"] - acc["bf16"]) <= 0.005, "in fp32 the bf16 run's parameters evaluate far off"
PY
ok "the CNN in bf16: other losses, test accuracy within a point of fp32's after $steps steps;" \
  "its checkpoint evaluates in fp32 where bf16 cannot run"
