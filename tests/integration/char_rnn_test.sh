#!/usr/bin/env bash
# A char-RNN through the toolchain (SINGA §4.2.3) on a small corpus made here
# (this repository's C++ sources, in sorted order): dl-shard --text cuts it
# into windows of symbol ids with the vocabulary in the manifest; BSP with 2
# workers x 16 ends with the parameters of 1 worker x 32 on the same records
# (the GRU's back-propagation through time included); two workers train it to
# well below a uniform guess, under BSP, async and SSP; a record holding a symbol outside the
# vocabulary is refused, naming the file and the record.
. "$(dirname "$0")/lib.sh"

find "$root/lib" -name '*.cpp' | LC_ALL=C sort | xargs cat >"$tmp/corpus.txt"
for n in 1 2; do
  "$bin/dl-shard" --text "$tmp/corpus.txt" --window 33 --out "$tmp/shards-$n" --shards $n >"$tmp/shard-$n.json" ||
    fail "dl-shard --text failed"
done
validate() { python3 -c "
import json, jsonschema, sys
jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))" "$@"; }
validate "$tmp/shards-2/manifest.json" "$root/schemas/manifest.schema.json" || fail "the manifest does not validate"
vocab=$(python3 -c "import json,sys; m=json.load(open(sys.argv[1])); assert m['classes']==len(m['vocabulary']); print(m['classes'])" \
  "$tmp/shards-2/manifest.json") || fail "the manifest's vocabulary is not its classes"
ok "dl-shard --text: windows of 33 symbols over a vocabulary of $vocab in the manifest"

cat >"$tmp/job.yaml" <<YAML
model:
  layers:
    - {name: data, type: data, shape: [33]}
    - {name: embed, type: embedding, srclayers: data, vocab: $vocab, num_output: 32, steps: 32}
    - {name: gru, type: gru, srclayers: embed, num_output: 64}
    - {name: logits, type: fully_connected, srclayers: gru, num_output: $vocab, axis: 1}
    - {name: loss, type: softmax_loss, srclayers: [logits, data]}
train: {batch_size: 16, updater: adam, learning_rate: 0.005, display_every: 50}
cluster: {nworkers_per_group: 2, consistency: bsp}
YAML

run() {  # run NAME WORKERS BATCH STEPS [OVERRIDE...]; JOB= and SHARDS= (a directory) may say others
  local dir=$tmp/$1 workers=$2 batch=$3 steps=$4 pids=() sets=() job=${JOB:-$tmp/job.yaml}
  local shards=${SHARDS:-$tmp/shards-$2}
  shift 4
  for o in "$@"; do sets+=(--set "$o"); done
  mkdir -p "$dir"
  "$bin/dl-plan" "$job" --strategy data --base-port "$(fresh_port)" -o "$dir/plan.json" \
    --set cluster.nworkers_per_group="$workers" --set train.batch_size="$batch" --set train.steps="$steps" \
    "${sets[@]}" >/dev/null || fail "dl-plan failed on the char-RNN"
  "$bin/dl-server" --plan "$dir/plan.json" --checkpoint-dir "$dir/ckpt" >"$dir/server.jsonl" 2>"$dir/server.log" &
  local server=$!
  for ((w = 0; w < workers; w++)); do
    "$bin/dl-worker" --plan "$dir/plan.json" --id $w --shards "$shards" >"$dir/w$w.jsonl" \
      2>"$dir/w$w.log" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || fail "a worker of $1 failed: $(cat "$dir"/w*.log)"; done
  wait $server || fail "the server of $1 failed: $(cat "$dir/server.log")"
}

# Momentum SGD here: Adam divides each step by the gradient's own scale, so
# the last bits in which two sums of the same gradients differ grow as large
# as the step itself where a gradient is near zero.
run two 2 16 20 train.updater=momentum train.learning_rate=0.1
run one 1 32 20 train.updater=momentum train.learning_rate=0.1
"$bin/dl-ckpt" diff "$(final_ckpt "$tmp/one")" "$(final_ckpt "$tmp/two")" >"$tmp/diff.json"
python3 - "$tmp/diff.json" <<'PY' || fail "parameters differ: $(cat "$tmp/diff.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["step_a"] == d["step_b"] == 20, d
assert not d["only_in_a"] and not d["only_in_b"], d
assert len(d["tensors"]) == 7 * 2, d  # 7 parameters x (value, velocity)
assert d["max_rel"] <= 1e-4, d["max_rel"]
print("max relative difference", d["max_rel"])
PY
ok "BSP 2 workers x 16 = 1 worker x 32 after 20 steps of BPTT"

# The hidden state carried from batch to batch (carry_state): dl-shard
# --contiguous cuts the windows into equal stretches of the corpus, and the
# loader reads a worker's shards as streams (16 a shard here), row i of a
# batch continuing row i of the one before. One worker reading both shards
# reads the same 32 streams as the two workers, so BSP still equals it;
# without the carried state the same run differs.
"$bin/dl-shard" --text "$tmp/corpus.txt" --window 33 --contiguous --out "$tmp/streams" --shards 2 >/dev/null ||
  fail "dl-shard --contiguous failed"
validate "$tmp/streams/manifest.json" "$root/schemas/manifest.schema.json" || fail "the contiguous manifest does not validate"
sed 's/num_output: 64}/num_output: 64, carry_state: true}/' "$tmp/job.yaml" >"$tmp/carry.yaml"
grep -q "carry_state: true" "$tmp/carry.yaml" || fail "the carrying job was not made"
JOB=$tmp/carry.yaml SHARDS=$tmp/streams run carry-two 2 16 20 train.updater=momentum train.learning_rate=0.1
JOB=$tmp/carry.yaml SHARDS=$tmp/streams run carry-one 1 32 20 train.updater=momentum train.learning_rate=0.1
SHARDS=$tmp/streams run fresh-one 1 32 20 train.updater=momentum train.learning_rate=0.1
"$bin/dl-ckpt" diff "$(final_ckpt "$tmp/carry-one")" "$(final_ckpt "$tmp/carry-two")" >"$tmp/carry-diff.json"
"$bin/dl-ckpt" diff "$(final_ckpt "$tmp/carry-one")" "$(final_ckpt "$tmp/fresh-one")" >"$tmp/fresh-diff.json"
python3 - "$tmp/carry-diff.json" "$tmp/fresh-diff.json" <<'PY' || fail "carried state: $(cat "$tmp/carry-diff.json")"
import json, sys
same, other = (json.load(open(p)) for p in sys.argv[1:])
assert same["step_a"] == same["step_b"] == 20 and same["max_rel"] <= 1e-4, same["max_rel"]
assert other["max_rel"] > 1e-3, other["max_rel"]
print("max relative difference", same["max_rel"], "; without the carried state", other["max_rel"])
PY
# Its evaluation reads the test windows as streams, the state carried.
python3 - "$tmp/carry-one/w0.jsonl" "$vocab" <<'PY' || fail "the carrying run's evaluation: $(grep '"done"' "$tmp/carry-one/w0.jsonl")"
import json, math, sys
done = [json.loads(l) for l in open(sys.argv[1]) if '"done"' in l][0]
assert math.isfinite(done["test_loss"]) and done["test_loss"] < math.log(int(sys.argv[2])), done
PY
ok "a carried hidden state: BSP 2 workers x 16 streams = 1 worker x 32 after 20 steps, and it changes the result"
# A kill leaves the carried state's run exactly as without it: each worker
# saves the state every step starts from (train-local gives dl-worker
# --state-dir), so a worker killed in the middle of a pass rejoins with the
# state it had there, and a server's death restarts the whole run from a
# checkpoint whose step's state is kept too. Final parameters compared bit for bit.
carry_run() {  # carry_run NAME: train-local over the streams, 2 workers x 16, 30 steps
  SHOAL_BIN=$bin RUN_DIR=$tmp/$1 BASE_PORT=$(fresh_port) "$root/scripts/train-local.sh" "$tmp/carry.yaml" \
    data.shards="$tmp/streams" train.steps=30 train.checkpoint_every=10 train.updater=momentum \
    train.learning_rate=0.1 >"$tmp/$1.out" 2>"$tmp/$1.err" || fail "train-local $1 failed: $(cat "$tmp/$1.err")"
}
carry_run calm
SHOAL_CRASH_AT=worker-between-sends:12:$tmp/worker-crashed carry_run worker-crash
SHOAL_CRASH_AT=server-version:25:$tmp/server-crashed carry_run server-crash
grep -q "restarting it: it rejoins" "$tmp/worker-crash.err" || fail "no worker died: $(cat "$tmp/worker-crash.err")"
# The checkpoint of step 20 is written in the background: the restart is from it or from 10's.
resumed=$(grep -oE "resuming at step (10|20)$" "$tmp/server-crash.err") ||
  fail "no restart from a checkpoint: $(cat "$tmp/server-crash.err")"
! grep -q "no state saved" "$tmp"/{worker,server}-crash/worker-*.log || fail "a worker restarted without its state"
for crash in worker-crash server-crash; do
  "$bin/dl-ckpt" diff "$(ls "$tmp"/calm/ckpt/*-0000000030.ckpt)" "$(ls "$tmp/$crash"/ckpt/*-0000000030.ckpt)" \
    >"$tmp/$crash.diff" || fail "dl-ckpt diff failed"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d['max_rel'] == 0 else 1)" "$tmp/$crash.diff" ||
    fail "after $crash the final parameters differ from the calm run's: $(head -c 300 "$tmp/$crash.diff")"
done
ok "a carried state survives kills: a worker killed mid-pass at step 11 and a server at version 25 ($resumed) end bit for bit as the calm run"
"$bin/dl-plan" "$tmp/carry.yaml" --strategy data -o "$tmp/carry-shuffled.json" --set cluster.nworkers_per_group=1 \
  --set train.steps=1 >/dev/null
expect_failure 1 "layer 'gru' carries its state from batch to batch \\(carry_state\\).*shard it with dl-shard --contiguous" \
  "$bin/dl-worker" --plan "$tmp/carry-shuffled.json" --standalone --shards "$tmp/shards-1"
ok "a carried state over shuffled shards is refused, saying how to shard them"

run train 2 16 300
python3 - "$tmp/train/w0.jsonl" "$vocab" <<'PY' || fail "the char-RNN did not learn: $(grep -E '"(step|done)"' "$tmp/train/w0.jsonl")"
import json, math, sys
records = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
done = [r for r in records if r.get("event") == "done"][0]
uniform = math.log(int(sys.argv[2]))
# Source code's characters: a GRU of 64 units reaches about half a uniform
# guess's loss in 300 steps of 16 windows each.
assert done["test_loss"] < 0.6 * uniform, (done["test_loss"], uniform)
assert done["test_accuracy"] > 0.3, done
print(f"test loss {done['test_loss']:.3f} (uniform {uniform:.3f}), next-symbol accuracy {done['test_accuracy']:.3f}")
PY
ok "two workers train the char-RNN well below a uniform guess"

# Async (each worker's gradient applied alone) and SSP (slack 2) train it too.
for consistency in async ssp; do
  slack=() && [ $consistency = ssp ] && slack=(cluster.staleness=2)
  run $consistency 2 16 150 cluster.consistency=$consistency "${slack[@]}"
  python3 - "$tmp/$consistency/w0.jsonl" "$tmp/$consistency/w1.jsonl" "$vocab" <<'PY' ||
import json, math, sys
uniform = math.log(int(sys.argv[3]))
done = [[json.loads(l) for l in open(path) if '"done"' in l][0] for path in sys.argv[1:3]]
# Worker 0 evaluates the servers' parameters; both trained on their own records.
assert done[0]["test_loss"] < 0.7 * uniform, (done[0]["test_loss"], uniform)
assert all(d["final_loss"] < 0.7 * uniform for d in done), [d["final_loss"] for d in done]
print(f"test loss {done[0]['test_loss']:.3f} (uniform {uniform:.3f}), training {[round(d['final_loss'], 3) for d in done]}")
PY
    fail "the char-RNN did not learn under $consistency: $(grep -h '"done"' "$tmp/$consistency"/w*.jsonl)"
done
ok "async and SSP (slack 2) train the char-RNN below 0.7 of a uniform guess in 150 steps"

# Text from the trained checkpoint: the prime, then 200 symbols of the
# vocabulary, the same for the same seed; code's punctuation already.
sample() { "$bin/dl-worker" --plan "$tmp/train/plan.json" --shards "$tmp/shards-2" --sample "$tmp/train/ckpt" "$@"; }
sample --prime "int " --chars 200 --temperature 0.8 >"$tmp/sample1.txt" || fail "dl-worker --sample failed"
sample --prime "int " --chars 200 --temperature 0.8 >"$tmp/sample2.txt"
cmp -s "$tmp/sample1.txt" "$tmp/sample2.txt" || fail "the same seed drew other text"
python3 - "$tmp/sample1.txt" "$tmp/shards-2/manifest.json" <<'PY' || fail "the sample is wrong: $(cat "$tmp/sample1.txt")"
import json, sys
text = open(sys.argv[1], "rb").read()
vocabulary = set(json.load(open(sys.argv[2]))["vocabulary"])
assert text.startswith(b"int ") and len(text) == 4 + 200 + 1, len(text)
assert all(b in vocabulary for b in text[:-1])
assert any(c in text for c in b";(){}"), text
PY
expect_failure 1 "the prime's byte 0 \\(7\\) is not in the vocabulary" sample --prime $'\a'

# A net that carries its state samples as it trained: the whole text read in
# order, window after window from the state the one before left. So the
# trained parameters in a net of 4-symbol windows that carries its state draw
# what they draw in a net of one window longer than all the text (the
# parameters do not depend on the window); without the carried state the
# 4-symbol windows draw other text.
window_job() {  # window_job WINDOW CARRY: the job with windows of WINDOW symbols, its plan and shards
  local dir=$tmp/window-$1-$2
  mkdir -p "$dir"
  "$bin/dl-shard" --text "$tmp/corpus.txt" --window $(($1 + 1)) --out "$dir/shards" --shards 1 >/dev/null
  sed "s/shape: \[33\]/shape: [$(($1 + 1))]/; s/steps: 32}/steps: $1}/; s/num_output: 64}/num_output: 64, carry_state: $2}/" \
    "$tmp/job.yaml" >"$dir/job.yaml"
  grep -q "steps: $1}" "$dir/job.yaml" || fail "the job of windows of $1 was not made"
  "$bin/dl-plan" "$dir/job.yaml" --strategy data -o "$dir/plan.json" --set train.steps=1 >/dev/null
  "$bin/dl-worker" --plan "$dir/plan.json" --shards "$dir/shards" --sample "$tmp/train/ckpt" --prime "int main(" \
    --chars 150 --temperature 0.8 --sample-seed 5 >"$tmp/sample-$1-$2.txt" || fail "sampling with windows of $1 failed"
}
window_job 4 true
window_job 300 false
window_job 4 false
cmp -s "$tmp/sample-4-true.txt" "$tmp/sample-300-false.txt" ||
  fail "the carrying net's sample differs from the whole text's: $(head -c 80 "$tmp/sample-4-true.txt") | $(head -c 80 "$tmp/sample-300-false.txt")"
! cmp -s "$tmp/sample-4-false.txt" "$tmp/sample-300-false.txt" || fail "4-symbol windows without the state drew the same text"
ok "dl-worker --sample draws text from the checkpoint: $(head -c 60 "$tmp/sample1.txt" | tr '\n' ' ')...; a carrying net of 4-symbol windows draws a 300-symbol window's text"

# A symbol id past the vocabulary, written into the test shard (its CRC and
# the manifest's hash made to agree), is refused as the record is read (by
# the evaluation that ends every run).
cp -r "$tmp/shards-1" "$tmp/bad"
python3 - "$tmp/bad/test.shard" "$vocab" <<'PY'
import struct, sys, zlib
path, vocab = sys.argv[1], int(sys.argv[2])
b = bytearray(open(path, "rb").read())
rank = struct.unpack_from("<I", b, 24)[0]
offset = 28 + 4 * rank + 4  # past the header's CRC: the first record, 33 symbols, u32 label, u32 CRC
b[offset + 5] = vocab   # one past the last symbol
struct.pack_into("<I", b, offset + 33 + 4, zlib.crc32(bytes(b[offset:offset + 37])))
open(path, "wb").write(b)
PY
rehash_manifest "$tmp/bad" test.shard
"$bin/dl-plan" "$tmp/job.yaml" --base-port "$(fresh_port)" -o "$tmp/bad.json" --set cluster.nworkers_per_group=1 \
  --set train.steps=1 >/dev/null
expect_failure 1 "test.shard': record 0: byte 5 is symbol $vocab, not one of the vocabulary's $vocab" \
  "$bin/dl-worker" --plan "$tmp/bad.json" --standalone --shards "$tmp/bad"
ok "a symbol outside the vocabulary is refused, naming the shard, the record and the byte"
