#!/usr/bin/env bash
# Every byte from outside is untrusted: job files and overrides, plans,
# checkpoints, shards and idx files made to hurt (their checksums and hashes
# recomputed where a field was changed, as anyone can) are refused with one
# line naming what is wrong and where, exit 1 (2 for usage), never a signal,
# and never after an allocation the input did not pay for.
. "$(dirname "$0")/lib.sh"

mlp=$root/configs/fashion-mlp.yaml
# refused CODE PATTERN CMD...: CMD exits CODE (not a signal) with one line of error matching PATTERN.
refused() {
  expect_failure "$@"
  local lines
  lines=$(grep -c "error:" "$tmp/err" || true)
  ((lines == 1)) || fail "$3: $lines error lines: $(head -c 600 "$tmp/err")"
}
# ---- job files and overrides (dl-plan) ----
refused 1 "--set 'train.batch_size=\['.*malformed YAML" "$bin/dl-plan" "$mlp" --set 'train.batch_size=['
refused 1 "--set 'cluster=,':1:1: malformed YAML: a second document or a stray token" "$bin/dl-plan" "$mlp" --set 'cluster=,'
refused 1 "--set 'train.steps=lots': section 'train': field 'steps' must be an integer" \
  "$bin/dl-plan" "$mlp" --set train.steps=lots
refused 1 "field 'steps' must be at most 2147483647, got 1e12" "$bin/dl-plan" "$mlp" --set train.steps=1e12
sed "s/name: fashion-mlp/name: bad$(printf '\xff')name/" "$mlp" >"$tmp/utf8.yaml"
refused 1 "utf8.yaml:[0-9]+:[0-9]+: not valid UTF-8: 'bad\\\\xFFname'" "$bin/dl-plan" "$tmp/utf8.yaml"
sed 's/num_output: 256/num_output: 100000000/' "$mlp" >"$tmp/wide.yaml"
refused 1 "layer 'fc1': field 'num_output' must be at most 16777216, got 100000000" "$bin/dl-plan" "$tmp/wide.yaml"
sed 's/num_output: 256/num_output: 2147483647/' "$mlp" >"$tmp/widest.yaml"
refused 1 "field 'num_output' must be at most 16777216" "$bin/dl-plan" "$tmp/widest.yaml"
sed 's/pad: 2/pad: 1000000/' "$root/configs/fashion-cnn.yaml" >"$tmp/pad.yaml"
refused 1 "layer 'conv1': field 'pad' must be at most 1024, got 1000000" "$bin/dl-plan" "$tmp/pad.yaml"
# A layer within its bounds whose parameter is still too large: refused before anything is allocated.
sed 's/num_output: 256/num_output: 16000000/' "$mlp" >"$tmp/huge.yaml"
read -r rc mb < <(peak_mb "$bin/dl-plan" "$tmp/huge.yaml")
((rc == 1 && mb < 200)) || fail "a 12.5G-float parameter: dl-plan exited $rc using $mb MB"
refused 1 "parameter 'fc1.weight' \[16000000,784\] is 12544000000 floats; at most 1073741824" "$bin/dl-plan" "$tmp/huge.yaml"
{ printf 'name: dup\nname: again\n'; sed 1d "$mlp"; } >"$tmp/dup.yaml"
refused 1 "dup.yaml:2:1: key 'name' appears twice in this mapping" "$bin/dl-plan" "$tmp/dup.yaml"
python3 -c "print('name: long'); print('x: [' + ','.join(['1'] * 300000) + ']')" >"$tmp/list.yaml"
read -r rc mb < <(peak_mb "$bin/dl-plan" "$tmp/list.yaml")
((rc == 1 && mb < 300)) || fail "a 300000-item list: dl-plan exited $rc using $mb MB"
refused 1 "more than 200000 values" "$bin/dl-plan" "$tmp/list.yaml"
refused 1 "at most 16384 servers|more than 16384 servers|must be at most 16384" \
  "$bin/dl-plan" "$mlp" --set cluster.nservers_per_group=100000
refused 1 "ports 60000..70001 for 2 servers and 10000 workers run past 65535" \
  "$bin/dl-plan" "$mlp" --set cluster.nservers_per_group=2 --set cluster.nworkers_per_group=10000 --base-port 60000
refused 1 "an endpoint given, '\\\\xFF://x': it is not a transport://address" \
  "$bin/dl-plan" "$mlp" --endpoints "$(printf '\xff')://x"
refused 1 "worker rank 0 of a group would need [0-9.]+ GiB .*; a process may use at most 64.0 GiB" \
  "$bin/dl-plan" "$root/configs/fashion-cnn.yaml" --set train.batch_size=1000000
ok "job files and overrides: malformed, mistyped, non-UTF-8, oversized or duplicated input is refused naming it"

# ---- plans (the hash recomputed after each edit) ----
"$bin/dl-plan" "$mlp" --base-port "$(fresh_port)" --set cluster.nservers_per_group=2 --set cluster.slice_floats=100000 \
  -o "$tmp/plan.json"
edit_plan() {  # edit_plan PYTHON_STATEMENT: plan.json edited as `p`, its hash recomputed, into edited.json
  python3 - "$tmp/plan.json" "$tmp/edited.json" "$1" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
exec(sys.argv[3])
p.pop("hash")
text = json.dumps(p, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
h = 14695981039346656037
for b in text.encode():
    h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
p["hash"] = "%016x" % h
json.dump(p, open(sys.argv[2], "w"))
PY
}
edit_plan 'p["slices"][0]["count"] = 10**12'
refused 1 "inconsistent plan: slice 0 covers \[0, \+1000000000000\) of 'fc1.weight'" "$bin/dl-server" --plan "$tmp/edited.json"
edit_plan 'p["slices"][1]["offset"] = 2**63'
refused 1 "inconsistent plan: slice 1 covers" "$bin/dl-worker" --plan "$tmp/edited.json" --id 0
edit_plan 'p["params"].append({"name": "ghost.weight", "shape": [3], "init": {"kind": "constant", "value": 0}, "slices": []})'
refused 1 "inconsistent plan: 7 parameters for a net of 6" "$bin/dl-server" --plan "$tmp/edited.json"
edit_plan 'p["params"][0]["role"] = "running_average"'
refused 1 "inconsistent plan: parameter 'fc1.weight' is a running average where the net's is not" \
  "$bin/dl-server" --plan "$tmp/edited.json"
edit_plan 'p["params"][0]["role"] = "momentum"'
refused 1 "params\[0\].role.*is 'momentum'; a parameter's role is absent \(trained\) or 'running_average'" \
  "$bin/dl-worker" --plan "$tmp/edited.json" --id 0
edit_plan 'p["workers"] = []'
refused 1 "inconsistent plan: 0 workers and 2 servers where the job has 2 and 2" "$bin/dl-server" --plan "$tmp/edited.json"
edit_plan 'p["layers"] = []'
refused 1 "inconsistent plan: 0 layers for a net of 7" "$bin/dl-worker" --plan "$tmp/edited.json" --id 1
edit_plan 'p["job"]["train"]["steps"] = -5'
refused 1 "field 'steps' must be at least 0, got -5" "$bin/dl-server" --plan "$tmp/edited.json"
ok "plans edited with their hash recomputed are refused before any process acts on them, naming the fault"

# ---- checkpoints (checksums recomputed after each edit) ----
port=$(fresh_port)
"$bin/dl-plan" "$mlp" --base-port "$port" --set train.steps=3 --set cluster.nworkers_per_group=1 -o "$tmp/small.json"
"$bin/dl-server" --plan "$tmp/small.json" --checkpoint-dir "$tmp/ckpt" >/dev/null 2>&1 &
server=$!
"$bin/dl-worker" --plan "$tmp/small.json" --shards "$(shards_for 1)" --no-eval >/dev/null 2>&1 || fail "no checkpoint to edit"
wait "$server"
ckpt=$(final_ckpt "$tmp")
edit_ckpt() {  # edit_ckpt PYTHON_STATEMENT [TRAILING_BYTES]: the header edited as `h`, CRCs recomputed, into bad/
  mkdir -p "$tmp/bad" && rm -f "$tmp"/bad/*
  python3 - "$ckpt" "$tmp/bad/$(basename "$ckpt")" "$1" "${2:-0}" <<'PY'
import json, struct, sys, zlib
src, dst, statement, trailing = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
b = open(src, "rb").read()
n = struct.unpack("<Q", b[12:20])[0]
h = json.loads(b[20:20 + n])
data = b[20 + n + 4:]
exec(statement)
text = json.dumps(h).replace('"__NESTED__"', "[" * 100000 + "]" * 100000).encode()
out = b[:8] + b[8:12] + struct.pack("<Q", len(text)) + text + struct.pack("<I", zlib.crc32(text)) + data
open(dst, "wb").write(out + b"\0" * trailing)
PY
}
bad() { echo "$tmp/bad/$(basename "$ckpt")"; }
edit_ckpt 'h["tensors"][0]["count"] = 2**62'
refused 1 "field 'tensors\[0\].count' must be an integer in 0..200704" "$bin/dl-ckpt" verify "$(bad)"
edit_ckpt 'h["tensors"][1]["offset"] = 2**64 - 8'
refused 1 "field 'tensors\[1\].offset' puts floats" "$bin/dl-ckpt" inspect "$(bad)"
edit_ckpt 'h["tensors"][2]["data_offset"] = 2**63'
refused 1 "tensor 'fc1.bias' .*: its data does not follow the tensor before it" "$bin/dl-ckpt" verify "$(bad)"
edit_ckpt 'h["step"] = -1'
refused 1 "field 'step' must be an integer in 0..18446744073709551615" "$bin/dl-ckpt" verify "$(bad)"
edit_ckpt 'h["servers"] = 10**15'
refused 1 "field 'servers' must be an integer in 0..65536" "$bin/dl-ckpt" merge "$(bad)" -o "$tmp/m.ckpt"
edit_ckpt 'h["metric"] = "__NESTED__"  # 100000 levels of [], as text'
refused 1 "JSON nested deeper than 64 levels" "$bin/dl-ckpt" inspect "$(bad)"
edit_ckpt 'pass' 7
refused 1 "7 bytes after the last tensor's data" "$bin/dl-ckpt" verify "$(bad)"
edit_ckpt 'h["tensors"][0]["count"] = 2**62'
mkdir -p "$tmp/resume" && cp "$(bad)" "$tmp/resume/"
refused 1 "field 'tensors\[0\].count' must be an integer" "$bin/dl-server" --plan "$tmp/small.json" --resume "$tmp/resume"
# A huge server count in a name lists no billion missing servers.
cp "$ckpt" "$tmp/bad/server-2000000000-step-0000000003.ckpt"
"$bin/dl-ckpt" ls "$tmp/bad" >"$tmp/ls.json" 2>"$tmp/ls.err" || true
(($(wc -c <"$tmp/ls.json") + $(wc -c <"$tmp/ls.err") < 100000)) || fail "dl-ckpt ls wrote a flood"
ok "checkpoints edited with their CRCs recomputed are refused in every reader, dl-server --resume included"

# ---- shards (record CRCs and the manifest's hashes recomputed) ----
cp -r "$(shards_for 1)" "$tmp/shards"
python3 - "$tmp/shards/train-00000.shard" <<'PY'
import struct, sys, zlib
path = sys.argv[1]
b = bytearray(open(path, "rb").read())
at = 44 + 0 * 792                        # record 0: 784 pixels, u32 label, u32 CRC
b[at + 784:at + 788] = struct.pack("<I", 12)
b[at + 788:at + 792] = struct.pack("<I", zlib.crc32(bytes(b[at:at + 788])))
open(path, "wb").write(b)
PY
rehash_manifest "$tmp/shards" train-00000.shard
# Records are checked as batches take them: ten batches of 6000 take the epoch's every record.
"$bin/dl-plan" "$mlp" --set train.batch_size=6000 --set cluster.nworkers_per_group=1 -o "$tmp/epoch.json" ||
  fail "dl-plan of batches of 6000"
refused 1 "train-00000.shard': record 0: label 12 is not one of the 10 classes" \
  "$bin/dl-worker" --plan "$tmp/epoch.json" --standalone --shards "$tmp/shards" --steps 10
cp "$(shards_for 1)/train-00000.shard" "$tmp/shards/"
printf '\x01' | dd of="$tmp/shards/train-00000.shard" bs=1 seek=1000 conv=notrunc status=none
refused 1 "train-00000.shard' has FNV-1a 64 [0-9a-f]{16}; .*manifest.json' says [0-9a-f]{16} \(the file changed" \
  "$bin/dl-worker" --plan "$tmp/small.json" --standalone --shards "$tmp/shards"
cp "$(shards_for 1)/train-00000.shard" "$tmp/shards/"
python3 - "$tmp/shards/train-00000.shard" <<'PY'
import struct, sys, zlib
path = sys.argv[1]
b = bytearray(open(path, "rb").read())
b[28:40] = struct.pack("<III", 1, 14, 56)  # the same 784 pixels, another shape
b[40:44] = struct.pack("<I", zlib.crc32(bytes(b[:40])))
open(path, "wb").write(b)
PY
rehash_manifest "$tmp/shards" train-00000.shard
refused 1 "train-00000.shard' holds records of \[1,14,56\]; .*manifest.json' says \[1,28,28\]" \
  "$bin/dl-worker" --plan "$tmp/small.json" --standalone --shards "$tmp/shards"
cp "$(shards_for 1)/train-00000.shard" "$tmp/shards/"
rehash_manifest "$tmp/shards" train-00000.shard
python3 - "$tmp/shards/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["train"][0]["records"] += 1000
m["train_records"] += 1000
json.dump(m, open(sys.argv[1], "w"))
PY
refused 1 "train-00000.shard' holds 60000 records; .*manifest.json' says 61000" \
  "$bin/dl-worker" --plan "$tmp/small.json" --standalone --shards "$tmp/shards"
ok "shards: a label beyond the classes, a changed file, another shape or a wrong count is refused naming it"

# ---- idx files ----
mkdir -p "$tmp/idx"
python3 - "$tmp/idx" <<'PY'
import gzip, struct, sys
d = sys.argv[1]
# Claims 2^31 × 4 bytes = 8 GiB of images, holds 100 bytes.
with gzip.open(d + "/train-images-idx3-ubyte.gz", "wb") as f:
    f.write(bytes([0, 0, 8, 3]) + struct.pack(">III", 2**31 - 1, 2, 2) + b"\0" * 100)
for name in ("train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
    with gzip.open(d + "/" + name, "wb") as f:
        f.write(bytes([0, 0, 8, 1]) + struct.pack(">I", 1) + b"\0")
PY
refused 1 "train-images-idx3-ubyte.gz': dims describe more than 4 GiB of data" \
  "$bin/dl-shard" --dataset fashion-mnist --source "$tmp/idx" --out "$tmp/idx-out" --shards 1
python3 - "$tmp/idx" <<'PY'
import gzip, struct, sys
with gzip.open(sys.argv[1] + "/train-images-idx3-ubyte.gz", "wb") as f:  # 2 GiB claimed, 100 bytes there
    f.write(bytes([0, 0, 8, 3]) + struct.pack(">III", 2**29, 2, 2) + b"\0" * 100)
PY
read -r rc mb < <(peak_mb "$bin/dl-shard" --dataset fashion-mnist --source "$tmp/idx" --out "$tmp/idx-out" --shards 1)
((rc == 1 && mb < 200)) || fail "an idx file claiming 2 GiB: dl-shard exited $rc using $mb MB"
refused 1 "truncated: dims need 2147483648 bytes of data, found 100" \
  "$bin/dl-shard" --dataset fashion-mnist --source "$tmp/idx" --out "$tmp/idx-out" --shards 1
ok "idx files claiming gigabytes they do not hold are refused without allocating them"

# ---- paths that are not UTF-8 ----
out=$tmp/$(printf 'shards-\xff')
"$bin/dl-shard" --dataset fashion-mnist --out "$out" --shards 1 >"$tmp/shard.json" ||
  fail "dl-shard into a non-UTF-8 path failed"
python3 -c "import json, sys; json.load(open(sys.argv[1]))" "$tmp/shard.json" || fail "its output is not JSON"
ok "a path that is not UTF-8 is written as U+FFFD in JSON output, not a crash"
