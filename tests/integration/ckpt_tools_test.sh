#!/usr/bin/env bash
# dl-ckpt on a real run's checkpoints (2 servers, fc1.weight sliced over both):
# ls, merge, export (npz, safetensors) read by NumPy, corruption named by
# verify and passed over by prepare-resume, dl-worker --eval-only on the
# merged file, and the exported .npz evaluated in PyTorch to the same accuracy.
. "$(dirname "$0")/lib.sh"

# NumPy and PyTorch (python3-numpy, python3-torch): the system Python has them
# even where another python3 comes first on PATH.
py=python3
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c 'import numpy, torch' 2>/dev/null; then py=$candidate; break; fi
done
"$py" -c 'import numpy, torch' || fail "python3-numpy and python3-torch are needed (scripts/install-deps.sh)"

run=$tmp/run
ckpt=$run/ckpt
SHOAL_BIN=$bin RUN_DIR=$run BASE_PORT=$(fresh_port) "$root/scripts/train-local.sh" \
  "$root/configs/fashion-mlp.yaml" cluster.nservers_per_group=2 cluster.slice_floats=50000 \
  train.steps=300 train.checkpoint_every=100 data.shards="$(shards_for 2)" \
  >"$tmp/out" 2>"$tmp/err" || fail "train-local failed: $(cat "$tmp/err")"

# ls: every file, and step 300 complete over both servers.
"$bin/dl-ckpt" ls "$ckpt" >"$tmp/ls.json" || fail "ls failed"
"$py" - "$tmp/ls.json" <<'PY' || fail "ls: $(cat "$tmp/ls.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["servers"] == 2 and j["servers_known"], j
assert len(j["checkpoints"]) == 6, j["checkpoints"]
assert all(c["bytes"] > 0 and "metric" in c and "updates" in c for c in j["checkpoints"]), j
steps = {s["step"]: s for s in j["steps"]}
assert sorted(steps) == [100, 200, 300] and all(s["complete"] for s in steps.values()), steps
PY
"$bin/dl-ckpt" ls --table "$ckpt" | grep -q "server-1-step-0000000300.ckpt" || fail "ls --table lacks a file"
ok "ls lists 6 checkpoints, steps 100..300 complete over 2 servers (JSON, and a table on request)"

# merge: whole parameters at the newest step, server -1.
"$bin/dl-ckpt" merge "$ckpt" -o "$tmp/model.ckpt" >"$tmp/merge.json" || fail "merge failed"
"$bin/dl-ckpt" inspect "$tmp/model.ckpt" >"$tmp/model.json" || fail "inspect of the merged file failed"
"$py" - "$tmp/model.json" <<'PY' || fail "merged: $(head -c 2000 "$tmp/model.json")"
import json, sys
m = json.load(open(sys.argv[1]))[0]
assert m["server"] == -1 and m["step"] == 300, m
t = {x["name"]: x for x in m["tensors"]}
assert t["fc1.weight"]["count"] == 784 * 256 and t["fc1.weight"]["shape"] == [256, 784], t["fc1.weight"]
assert t["fc1.weight@velocity"]["count"] == 784 * 256
assert len(t) == 12, sorted(t)
PY
ok "merge joins the 2 servers' slices into whole parameters at step 300"
expect_failure 1 "step 300 is incomplete: missing server 1 \(of 2\)" \
  "$bin/dl-ckpt" merge "$ckpt/server-0-step-0000000300.ckpt" -o "$tmp/half.ckpt"
expect_failure 1 "is at step 200" \
  "$bin/dl-ckpt" merge "$ckpt/server-0-step-0000000300.ckpt" "$ckpt/server-1-step-0000000200.ckpt" -o "$tmp/mixed.ckpt"
ok "merge refuses an incomplete set and mixed steps, naming them"
newest=$ckpt/server-0-step-0000000300.ckpt
cp "$newest" "$tmp/newest.ckpt"
expect_failure 1 "is '.*server-0-step-0000000300.ckpt', which it reads" \
  "$bin/dl-ckpt" merge "$ckpt" -o "$newest"
expect_failure 1 "is '.*server-0-step-0000000300.ckpt', which it reads" \
  "$bin/dl-ckpt" export "$newest" "$ckpt/server-1-step-0000000300.ckpt" --format npz -o "$newest"
expect_failure 1 "lies in the checkpoint directory" "$bin/dl-ckpt" export "$ckpt" -o "$ckpt/model.npz"
expect_failure 1 "lies beside the checkpoint .*, where it would join its sets" \
  "$bin/dl-ckpt" merge "$newest" "$ckpt/server-1-step-0000000300.ckpt" -o "$ckpt/../ckpt/merged.ckpt"
cmp -s "$newest" "$tmp/newest.ckpt" || fail "a refused merge or export changed the checkpoint it read"
"$bin/dl-ckpt" verify "$ckpt" >/dev/null || fail "the checkpoint directory does not verify after the refusals"
ok "merge and export refuse to write over what they read or into its checkpoint directory"

# export: npz and safetensors, read back by NumPy with the parameters' shapes.
"$bin/dl-ckpt" export "$tmp/model.ckpt" -o "$tmp/model.npz" >/dev/null || fail "export npz failed"
"$bin/dl-ckpt" export "$ckpt" -o "$tmp/model.safetensors" --with-velocity >/dev/null || fail "export safetensors failed"
"$py" - "$tmp/model.npz" "$tmp/model.safetensors" <<'PY' || fail "exports do not read back"
import json, struct, sys, numpy
want = {"fc1.weight": (256, 784), "fc1.bias": (256,), "fc2.weight": (128, 256), "fc2.bias": (128,),
        "fc3.weight": (10, 128), "fc3.bias": (10,)}
z = numpy.load(sys.argv[1])
assert {k: z[k].shape for k in z.files} == want, {k: z[k].shape for k in z.files}
assert all(z[k].dtype == numpy.float32 for k in z.files)
b = open(sys.argv[2], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
for k, shape in want.items():
    for name in (k, k + "@velocity"):
        lo, hi = h[name]["data_offsets"]
        assert h[name]["dtype"] == "F32" and tuple(h[name]["shape"]) == shape, (name, h[name])
        a = numpy.frombuffer(b[8 + n + lo:8 + n + hi], dtype="<f4").reshape(shape)
        if name == k:
            assert numpy.array_equal(a, z[k]), name
PY
ok "export writes .npz and .safetensors that NumPy reads with the parameters' shapes and equal values"

# eval-only: the merged file, the directory, and PyTorch on the exported .npz.
"$bin/dl-worker" --plan "$run/plan.json" --eval-only "$tmp/model.ckpt" --shards "$(shards_for 2)" \
  >"$tmp/eval.jsonl" 2>"$tmp/eval.err" || fail "eval-only failed: $(cat "$tmp/eval.err")"
accuracy=$(field "$tmp/eval.jsonl" eval "r['test_accuracy']")
[[ $(field "$tmp/eval.jsonl" eval "r['step']") == 300 ]] || fail "eval-only: $(cat "$tmp/eval.jsonl")"
trained=$(field "$run/worker-0.jsonl" "done" "r['test_accuracy']")
"$py" -c "import sys; a, t = map(float, sys.argv[1:]); sys.exit(0 if a >= 0.7 and abs(a - t) < 1e-9 else 1)" \
  "$accuracy" "$trained" || fail "eval-only accuracy $accuracy; the run ended at $trained"
"$bin/dl-worker" --plan "$run/plan.json" --eval-only "$ckpt" --shards "$(shards_for 2)" >"$tmp/eval-dir.jsonl" ||
  fail "eval-only on the directory failed"
[[ $(field "$tmp/eval-dir.jsonl" eval "r['test_accuracy']") == "$accuracy" ]] || fail "directory and merged file differ"
ok "dl-worker --eval-only gives accuracy $accuracy at step 300, as the run's own evaluation"
torch=$("$py" "$root/tests/integration/torch_export_check.py" "$tmp/model.npz") || fail "torch check failed"
"$py" -c "import json, sys; t = json.loads(sys.argv[1])['test_accuracy']; sys.exit(0 if abs(t - float(sys.argv[2])) <= 1e-4 else 1)" \
  "$torch" "$accuracy" || fail "PyTorch on the .npz: $torch; dl-worker --eval-only: $accuracy"
ok "PyTorch evaluates the exported .npz to the same accuracy ($torch)"

sed 's/num_output: 256/num_output: 64/' "$root/configs/fashion-mlp.yaml" >"$tmp/other.yaml"
"$bin/dl-plan" "$tmp/other.yaml" -o "$tmp/other.json" || fail "cannot plan the other net"
expect_failure 1 "parameter 'fc1.weight' is \[256,784\], the plan's net has \[64,784\]" \
  "$bin/dl-worker" --plan "$tmp/other.json" --eval-only "$tmp/model.ckpt" --shards "$(shards_for 2)"
ok "eval-only refuses a checkpoint of another net, naming the parameter and both shapes"

# best: the set with the highest recorded accuracy, or a clear refusal when none is recorded.
if "$bin/dl-ckpt" best "$ckpt" >"$tmp/best.json" 2>"$tmp/best.err"; then
  "$py" -c "import json,sys; b=json.load(open(sys.argv[1])); assert b['step'] in (100,200,300) and len(b['files'])==2, b" \
    "$tmp/best.json" || fail "best: $(cat "$tmp/best.json")"
  ok "best names a complete set with the highest recorded accuracy"
else
  grep -q "records a metric (test_accuracy)" "$tmp/best.err" || fail "best: $(cat "$tmp/best.err")"
  ok "best says clearly that no checkpoint records a metric"
fi

# A flipped byte in server 1's newest file: verify names the tensor; prepare-resume falls back to step 200.
bad=$ckpt/server-1-step-0000000300.ckpt
size=$(stat -c %s "$bad")
printf '\x01' | dd of="$bad" bs=1 seek=$((size - 10)) conv=notrunc status=none
expect_failure 1 "server-1-step-0000000300.ckpt': tensor '[a-z0-9.]+(\[[0-9]+\])?@velocity' \(bytes [0-9]+\.\.[0-9]+\): checksum mismatch" \
  "$bin/dl-ckpt" verify "$ckpt"
ok "verify names the corrupted tensor and its bytes"
"$bin/dl-ckpt" prepare-resume "$ckpt" -o "$tmp/resume" >"$tmp/resume.json" 2>"$tmp/resume.err" ||
  fail "prepare-resume failed: $(cat "$tmp/resume.err")"
grep -qE "passing over step 300: '$bad': tensor '[^']+' \(bytes [0-9]+\.\.[0-9]+\): checksum mismatch" "$tmp/resume.err" ||
  fail "prepare-resume did not say why it passed over step 300: $(cat "$tmp/resume.err")"
grep -q "falling back to step 200" "$tmp/resume.err" || fail "prepare-resume: $(cat "$tmp/resume.err")"
"$py" - "$tmp/resume.json" "$tmp/resume" <<'PY' || fail "prepare-resume: $(cat "$tmp/resume.json")"
import json, os, sys
r = json.load(open(sys.argv[1]))
assert r["step"] == 200 and len(r["files"]) == 2 and r["skipped"][0]["step"] == 300, r
assert sorted(os.listdir(sys.argv[2])) == ["server-0-step-0000000200.ckpt", "server-1-step-0000000200.ckpt"], os.listdir(sys.argv[2])
PY
"$bin/dl-ckpt" verify "$tmp/resume" >/dev/null || fail "the resume directory does not verify"
ok "prepare-resume passes over the corrupted step 300, says so, and copies step 200's 2 files"
"$bin/dl-ckpt" merge "$ckpt" -o "$tmp/model200.ckpt" --step 200 >/dev/null || fail "merge --step 200 failed"
expect_failure 2 "" "$bin/dl-ckpt" merge "$ckpt"
ok "merge --step picks an older step; a missing -o is a usage error"
