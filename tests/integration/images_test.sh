#!/usr/bin/env bash
# Images the user brings (dl-shard --images, --cifar, --npy, --npz) train as
# the idx files do: the Fashion-MNIST PNG folder listed in idx order gives
# the idx files' shard files byte for byte, and the CNN trained from each
# ends bit for bit alike; augmented JPEG records keep BSP's 2 workers x B
# equal to 1 worker x 2B; every reader's hostile input is a clear error or a
# counted skip, in bounded memory.
. "$(dirname "$0")/lib.sh"

make_data() { /usr/bin/python3 "$root/scripts/make-image-data.py" "$@" >/dev/null || fail "make-image-data.py $*"; }
cnn=$root/configs/fashion-cnn.yaml

# --- The PNG folder against the idx files ---
make_data fashion-png "$tmp/png" --limit 600 --threads 2
python3 - "$tmp/png" <<'PY'
import os, sys
root = sys.argv[1]
for split in ("train", "test"):
    rows = []
    for c in sorted(os.listdir(f"{root}/{split}")):
        rows += [(int(f[:-4]), f"{split}/{c}/{f}", int(c.split("-")[0])) for f in os.listdir(f"{root}/{split}/{c}")]
    open(f"{root}/{split}.txt", "w").write("".join(f"{p} {l}\n" for _, p, l in sorted(rows)))
PY
"$bin/dl-shard" --images "$tmp/png/train.txt" --test-dir "$tmp/png/test.txt" --out "$tmp/from-png" --shards 1 \
  --seed 5 --threads 2 >"$tmp/png.json" || fail "dl-shard --images the PNG list"
"$bin/dl-shard" --dataset fashion-mnist --limit 600 --out "$tmp/from-idx" --shards 1 --seed 5 >/dev/null ||
  fail "dl-shard --dataset --limit"
for f in train-00000.shard test.shard; do
  cmp -s "$tmp/from-png/$f" "$tmp/from-idx/$f" || fail "$f from the PNGs differs from the idx files'"
done
ok "the Fashion-MNIST PNGs listed in idx order shard to the idx files' bytes"
# A centre crop larger than the images pads them with zeros, as torchvision's
# CenterCrop: the same pixel sums over 32 x 32 instead of 28 x 28.
"$bin/dl-shard" --images "$tmp/png/train.txt" --test-dir "$tmp/png/test.txt" --out "$tmp/padded" --shards 1 \
  --seed 5 --center-crop 32 >/dev/null || fail "dl-shard --center-crop 32 of 28 x 28 images"
python3 - "$tmp/padded/manifest.json" "$tmp/from-png/manifest.json" <<'PY' || fail "the padded records' statistics"
import json, sys
padded, plain = (json.load(open(p)) for p in sys.argv[1:])
assert padded["record_shape"] == [1, 32, 32], padded["record_shape"]
assert abs(padded["mean"][0] - plain["mean"][0] * 784 / 1024) < 1e-9 * plain["mean"][0], (padded, plain)
PY
ok "--center-crop 32 of 28 x 28 images pads them with zeros (mean x 784/1024)"
train() {  # train NAME SHARDS: 40 steps of the CNN, one process
  "$bin/dl-plan" "$cnn" --set cluster.nworkers_per_group=1 --set train.steps=40 --set train.batch_size=16 \
    -o "$tmp/$1.json" >/dev/null
  "$bin/dl-worker" --plan "$tmp/$1.json" --standalone --shards "$2" | grep '"event":"done"' >"$tmp/$1.done" ||
    fail "training $1"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["final_loss"], r["test_accuracy"])' "$tmp/$1.done"
}
a=$(train png "$tmp/from-png")
b=$(train idx "$tmp/from-idx")
[[ "$a" == "$b" ]] || fail "the CNN from the PNGs ends at '$a', from the idx files at '$b'"
ok "the CNN trained from either ends bit for bit alike (final loss, test accuracy: $a)"

# The folder itself: classes by name, the test folder's classes the train's.
"$bin/dl-shard" --images "$tmp/png/train" --test-dir "$tmp/png/test" --out "$tmp/folder" --shards 2 \
  --val-fraction 0.1 >"$tmp/folder.json" || fail "dl-shard --images a folder"
jq -e '.classes == 10 and .val_records == 60 and .test_records == 600' "$tmp/folder.json" >/dev/null ||
  fail "the folder's summary: $(cat "$tmp/folder.json")"
jq -e '.class_names[0] == "0-tshirt" and .version == 2 and (.mean | length) == 1' "$tmp/folder/manifest.json" \
  >/dev/null || fail "the folder's manifest: $(cat "$tmp/folder/manifest.json")"
ok "a class folder: names sorted into labels, a validation set held out, the channels' statistics measured"

# --- JPEG records, augmented: BSP 2 workers x 8 = 1 worker x 16 ---
make_data synthetic "$tmp/syn" --classes 4 --per-class 24 --test-per-class 4 --min-side 40 --max-side 80 --threads 2
for n in 1 2; do
  "$bin/dl-shard" --images "$tmp/syn/train" --test-dir "$tmp/syn/val" --out "$tmp/jpeg-$n" --shards "$n" \
    --store jpeg --resize 36 --threads 2 >/dev/null || fail "dl-shard --store jpeg ($n shards)"
done
cat >"$tmp/small.yaml" <<'EOF'
model:
  layers:
    - {name: data, type: data, shape: [3, 24, 24]}
    - {name: conv, type: convolution, srclayers: data, num_output: 8, kernel: 3, pad: 1}
    - {name: relu, type: relu, srclayers: conv}
    - {name: pool, type: pooling, srclayers: relu, kernel: 2, stride: 2}
    - {name: fc, type: fully_connected, srclayers: pool, num_output: 4}
    - {name: loss, type: softmax_loss, srclayers: [fc, data]}
train: {steps: 6, updater: momentum, learning_rate: 0.02}  # one pass: later ones reshuffle per worker
data: {random_resized_crop: {size: 24, scale: [0.3, 1.0]}, mirror: true, normalize: true,
       resize: 28, center_crop: 24}
EOF
bsp() {  # bsp NAME WORKERS BATCH
  local dir=$tmp/$1 pids=()
  mkdir -p "$dir"
  "$bin/dl-plan" "$tmp/small.yaml" --strategy data --base-port "$(fresh_port)" -o "$dir/plan.json" \
    --set cluster.nworkers_per_group="$2" --set train.batch_size="$3" >/dev/null
  "$bin/dl-server" --plan "$dir/plan.json" --checkpoint-dir "$dir/ckpt" >/dev/null 2>"$dir/server.log" &
  local server=$!
  for ((w = 0; w < $2; w++)); do
    "$bin/dl-worker" --plan "$dir/plan.json" --id "$w" --shards "$tmp/jpeg-$2" --no-eval >/dev/null 2>"$dir/w$w.log" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || fail "a worker of $1 failed: $(cat "$dir"/w*.log)"; done
  wait "$server" || fail "the server of $1 failed: $(cat "$dir/server.log")"
}
bsp two 2 8
bsp one 1 16
"$bin/dl-ckpt" diff "$(final_ckpt "$tmp/one")" "$(final_ckpt "$tmp/two")" >"$tmp/diff.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["max_rel"] <= 1e-4 else 1)' "$tmp/diff.json" ||
  fail "augmented BSP 2 x 8 differs from 1 x 16: $(head -c 300 "$tmp/diff.json")"
ok "JPEG records, random resized crops and flips: BSP 2 workers x 8 = 1 worker x 16 ($(jq .max_rel "$tmp/diff.json"))"

# --- CIFAR batches and numpy arrays ---
make_data cifar "$tmp/cifar" --records 40 --threads 2
"$bin/dl-shard" --cifar "$tmp/cifar" --out "$tmp/cifar-shards" --shards 1 >"$tmp/cifar.json" || fail "dl-shard --cifar"
jq -e '.classes == 10 and .records_per_shard == [200] and .test_records == 40 and .record_shape == [3,32,32]' \
  "$tmp/cifar.json" >/dev/null || fail "CIFAR's summary: $(cat "$tmp/cifar.json")"
make_data npy "$tmp/npz" --records 40 --npz --layout nchw --dtype float32 --threads 2
"$bin/dl-shard" --npz "$tmp/npz/data.npz" --layout nchw --out "$tmp/npz-shards" --shards 1 >"$tmp/npz.json" ||
  fail "dl-shard --npz"
jq -e '.record_shape == [3,32,32] and .test_records == 4' "$tmp/npz.json" >/dev/null ||
  fail "the npz's summary: $(cat "$tmp/npz.json")"
ok "CIFAR-10 batches and a float32 NCHW .npz shard as images of 3 x 32 x 32"

# --- Hostile inputs ---
bad=$tmp/bad/c0
mkdir -p "$bad" "$tmp/bad/c1"
cp "$tmp/syn/train/c000/00000.jpg" "$bad/good.jpg"
cp "$tmp/syn/train/c001/00000.jpg" "$tmp/bad/c1/good.jpg"
head -c 700 "$tmp/syn/train/c000/00001.jpg" >"$bad/truncated.jpg"
: >"$bad/empty.png"
python3 - "$tmp/png/train/0-tshirt" "$bad/huge.png" <<'PY'
import os, struct, sys, zlib
# A valid PNG header claiming 100000 x 100000 gray pixels, then a tiny IDAT.
src = sys.argv[1]
ihdr = struct.pack(">IIBBBBB", 100000, 100000, 8, 0, 0, 0, 0)
chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
open(sys.argv[2], "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) +
                              chunk(b"IEND", b""))
PY
ln -s "$tmp/bad" "$bad/loop"
read -r rc mb < <(peak_mb "$bin/dl-shard" --images "$tmp/bad" --out "$tmp/bad-shards" --shards 1 --store jpeg \
  --test-fraction 0.4)
((rc == 0)) || fail "the folder with bad files failed (exit $rc): $(cat "$tmp/out" "$tmp/err" 2>/dev/null)"
((mb < 400)) || fail "the folder with a 100000 x 100000 PNG took $mb MB"
jq -e '.skipped == 3 and .passed_over.other_files == 1' "$tmp/out" >/dev/null ||
  fail "the bad files were not counted: $(cat "$tmp/out")"
for name in truncated.jpg empty.png huge.png; do
  grep -q "$name" "$tmp/out" || fail "$name is not named among the skipped: $(cat "$tmp/out")"
done
ok "a truncated JPEG, a zero-byte file and a PNG claiming 100000 x 100000 are skipped and named; a link loop passed over ($mb MB)"
expect_failure 1 "c0/(truncated.jpg|empty.png|huge.png)': [a-z]" "$bin/dl-shard" --images "$tmp/bad" --out "$tmp/strict" --shards 1 --strict --store jpeg
[[ ! -e "$tmp/strict" ]] || [[ -z "$(ls -A "$tmp/strict")" ]] || fail "--strict left files: $(ls "$tmp/strict")"
ok "--strict stops at the first bad image, naming it, and leaves nothing"
expect_failure 1 "--shards must be in 1\.\.3 \(one training image per shard at least\), got 1000" \
  "$bin/dl-shard" --images "$tmp/bad" --out "$tmp/too-many" --shards 1000 --store jpeg --test-fraction 0.4
# Three training images, at least one of them bad, dealt to three shards.
expect_failure 1 "training shard 'train-0000[0-2].shard' would hold no record: 3 images could not be read \(the first: .*c0/.*\); fewer --shards" \
  "$bin/dl-shard" --images "$tmp/bad" --out "$tmp/some-empty" --shards 3 --store jpeg --test-fraction 0.4
[[ -z "$(ls -A "$tmp/some-empty" 2>/dev/null)" ]] || fail "a refused sharding left files: $(ls "$tmp/some-empty")"
mkdir -p "$tmp/all-bad/c0" "$tmp/all-bad/c1"
cp "$bad/truncated.jpg" "$tmp/all-bad/c0/" && : >"$tmp/all-bad/c1/empty.png"
expect_failure 1 "none of the 2 images could be read; the first: .*all-bad/c[01]/(truncated.jpg|empty.png)': [a-z]" \
  "$bin/dl-shard" --images "$tmp/all-bad" --out "$tmp/all-bad-shards" --shards 1
ok "more shards than training images, a shard left empty by bad images, and no readable image are refused, named"

mkdir -p "$tmp/many"
(cd "$tmp/many" && seq -f "class%06g" 0 99999 | xargs mkdir)
read -r rc mb < <(peak_mb "$bin/dl-shard" --images "$tmp/many" --out "$tmp/many-shards" --shards 1)
((rc == 1)) && grep -q "holds no images in class folders" "$tmp/err" ||
  fail "100000 empty class folders: exit $rc, $(cat "$tmp/err")"
((mb < 400)) || fail "100000 empty class folders took $mb MB"
ok "100000 empty class folders: a clear error ($mb MB)"

cp -r "$tmp/cifar" "$tmp/cifar-bad"
printf 'x' >>"$tmp/cifar-bad/data_batch_2.bin"
expect_failure 1 "data_batch_2.bin' is 122921 bytes, not a whole number of 3073-byte CIFAR-10 records" \
  "$bin/dl-shard" --cifar "$tmp/cifar-bad" --out "$tmp/cifar-bad-shards" --shards 1
make_data npy "$tmp/npy" --records 20 --threads 2
python3 - "$tmp/npy/images.npy" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
i = b.find(b"(20,")
b[i:i + 4] = b"(99,"  # the header says 99 images; the file holds 20
open(sys.argv[1], "wb").write(bytes(b))
PY
expect_failure 1 "images.npy': its header says .* but the file is" \
  "$bin/dl-shard" --npy "$tmp/npy/images.npy" "$tmp/npy/labels.npy" --out "$tmp/npy-shards" --shards 1
ok "a CIFAR batch of the wrong length and an npy whose header lies are refused, naming the file"
