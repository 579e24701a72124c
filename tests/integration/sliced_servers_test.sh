#!/usr/bin/env bash
# BSP over two servers: parameters cut into slices spread over both, each
# server checkpoints its own shard, and dl-ckpt verifies them.
. "$(dirname "$0")/lib.sh"

run=$tmp/run
SHOAL_BIN=$bin RUN_DIR=$run BASE_PORT=$(fresh_port) "$root/scripts/train-local.sh" \
  "$root/configs/fashion-mlp.yaml" cluster.nservers_per_group=2 cluster.slice_floats=50000 \
  train.steps=300 train.checkpoint_every=100 data.shards="$(shards_for 2)" \
  >"$tmp/out" 2>"$tmp/err" || fail "train-local failed: $(cat "$tmp/err")"

python3 - "$run/plan.json" <<'PY' || fail "plan does not spread slices"
import json, sys
p = json.load(open(sys.argv[1]))
fc1 = [s for s in p["slices"] if s["param"] == "fc1.weight"]
# 200704 floats: half on each server, each half in slices of at most 50000.
assert [(s["server"], s["count"]) for s in fc1] == [(0, 50000), (0, 50000), (0, 352), (1, 50000), (1, 50000), (1, 352)], fc1
PY
ok "fc1.weight is cut into 6 slices, half of it on each of the 2 servers"

"$bin/dl-ckpt" verify "$run/ckpt" >"$tmp/verify.json" || fail "verify failed"
python3 - "$tmp/verify.json" <<'PY' || fail "checkpoints: $(cat "$tmp/verify.json")"
import json, sys
v = json.load(open(sys.argv[1]))
newest = v["sets"][0]
assert newest["step"] == 300 and newest["state"] == "complete" and len(newest["files"]) == 2, newest
assert all(s["state"] == "complete" for s in v["sets"]) and v["temporary"] == [], v
PY
ok "both servers wrote a final checkpoint at step 300 that verifies"
[[ $(compgen -G "$run/ckpt/server-0-*.ckpt" | wc -l) -eq 3 ]] || fail "expected 3 kept checkpoints of server 0: $(ls "$run/ckpt")"
ok "periodic checkpoints are pruned to the last 3"

accuracy=$(field "$run/worker-0.jsonl" "done" "r['test_accuracy']")
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.70 else 1)" "$accuracy" ||
  fail "accuracy $accuracy after 300 steps"
ok "test accuracy $accuracy after 300 BSP steps on 2 servers"
