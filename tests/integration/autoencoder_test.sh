#!/usr/bin/env bash
# SINGA's deep auto-encoder pipeline, short (experiments/autoencoder, 100 steps
# a stage): four RBMs pre-trained in turn by CD-1 on two workers and a server,
# each starting its lower layers from the checkpoints before it (init_from),
# then the unfolded 784-1000-500-250-2 net fine-tuned by back-propagation. Its
# test reconstruction error beats a 2-component PCA's on the same data (the
# figures script computes both in numpy), numpy's forward pass over the exported
# weights agrees with the run's own evaluation, and the pictures are written.
. "$(dirname "$0")/lib.sh"

cp -r "$root/experiments/autoencoder" "$tmp/"
rm -rf "$tmp/autoencoder/out"
make -C "$tmp/autoencoder" BIN="$bin" ROOT="$root" STEPS=100 >"$tmp/make.log" 2>&1 ||
  fail "the pipeline failed: $(tail -20 "$tmp/make.log")"
out=$tmp/autoencoder/out
python3 - "$out" <<'PY' || fail "the pipeline's figures are wrong: $(cat "$out/figures/summary.json")"
import json, math, os, sys
out = sys.argv[1]
s = json.load(open(os.path.join(out, "figures", "summary.json")))
stages = s["stages"]
assert list(stages) == ["rbm1", "rbm2", "rbm3", "rbm4", "finetune"], stages
for name, st in stages.items():
    assert all(math.isfinite(e) for e in st["train_per_epoch"] + [st["test"]]), (name, st)
# numpy's forward pass over the exported weights is the run's own evaluation.
ae, pca = s["autoencoder_test_error"], s["pca2_test_error"]
assert abs(ae - stages["finetune"]["test"]) < 1e-4 * ae, (ae, stages["finetune"])
assert ae < pca, f"auto-encoder {ae:.2f} is not below PCA's {pca:.2f}"
for png in ("rbm1-filters.png", "codes.png"):
    with open(os.path.join(out, "figures", png), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n", png
print(f"auto-encoder test error {ae:.2f}, 2-component PCA {pca:.2f}")
PY
# The later stages started from the earlier ones' checkpoints, as their plans say.
grep -q "\"checkpoint\": *\"$out/rbm1/ckpt\"" <(python3 -m json.tool "$out/rbm2/plan.json") ||
  fail "RBM 2's plan does not start fc1 from RBM 1's checkpoint"
ok "RBMs pre-trained in turn, the auto-encoder fine-tuned from them beats PCA, pictures drawn"
# RBM 4's layers below it are frozen (lr_mult 0): its workers send the RBM's
# gradients and nothing of theirs, as the plan predicts.
python3 - "$out/rbm4" <<'PY' || fail "RBM 4's workers exchanged frozen parameters"
import json, math, os, sys
run = sys.argv[1]
plan = json.load(open(os.path.join(run, "plan.json")))
trained = sum(4 * math.prod(p["shape"]) for p in plan["params"] if p["lr_mult"] != 0)
frozen = sum(4 * math.prod(p["shape"]) for p in plan["params"] if p["lr_mult"] == 0)
assert trained > 0 and frozen > 100 * trained, (trained, frozen)
predicted = sum(l["param_bytes_out"] for l in plan["planner"]["layers"])
assert predicted == trained, (predicted, trained)
for w in (0, 1):
    steps = [json.loads(l) for l in open(os.path.join(run, f"worker-{w}.jsonl"))]
    sent = [s["bytes_per_step"] for s in steps if s["event"] == "step"]
    assert sent and all(b["param_bytes_out"] == trained and b["param_bytes_in"] == trained for b in sent), (w, sent)
print(f"RBM 4: {trained} bytes a step each way, {frozen} frozen stay put")
PY
ok "frozen layers' parameters are read once and never exchanged"
