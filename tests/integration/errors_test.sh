#!/usr/bin/env bash
# Bad input is refused clearly: each refusal names what is wrong and where.
. "$(dirname "$0")/lib.sh"

mlp=$root/configs/fashion-mlp.yaml

# Job files.
expect_failure 1 "cannot open '$tmp/missing.yaml'" "$bin/dl-plan" "$tmp/missing.yaml"
ok "a missing job file is named"

printf 'name: bad\nmodel:\n  layers: [\n    {name: data, type: data\n' >"$tmp/malformed.yaml"
expect_failure 1 "$tmp/malformed.yaml:[0-9]+:[0-9]+: malformed YAML" "$bin/dl-plan" "$tmp/malformed.yaml"
ok "malformed YAML is refused with file:line:column"

sed 's/type: relu, srclayers: fc1/type: fancy, srclayers: fc1/' "$mlp" >"$tmp/unknown.yaml"
line=$(grep -n 'type: fancy' "$tmp/unknown.yaml" | cut -d: -f1)
expect_failure 1 "$tmp/unknown.yaml:$line:[0-9]+: layer 'relu1': field 'type' is 'fancy', not a layer type" \
  "$bin/dl-plan" "$tmp/unknown.yaml"
ok "an unknown layer type is refused naming the layer, its line and the known types"

sed 's/{name: fc2, type: fully_connected, srclayers: relu1, num_output: 128}/{name: fc2, type: convolution, srclayers: relu1, num_output: 8, kernel: 3}/' \
  "$mlp" >"$tmp/shape.yaml"
expect_failure 1 "layer 'fc2': needs a \[channels, height, width\] source; 'relu1' gives \[256\]" \
  "$bin/dl-plan" "$tmp/shape.yaml"
ok "a shape mismatch between layers is refused naming both layers"

sed 's/num_output: 256/num_ouput: 256/' "$mlp" >"$tmp/typo.yaml"
expect_failure 1 "$tmp/typo.yaml:[0-9]+:[0-9]+: layer 'fc1': (missing field 'num_output'|unknown field 'num_ouput')" \
  "$bin/dl-plan" "$tmp/typo.yaml"
ok "a misspelt field is refused"

sed 's/consistency: bsp/consistency: bsp\n  staleness: 2/' "$mlp" >"$tmp/slack.yaml"
line=$(grep -n 'staleness: 2' "$tmp/slack.yaml" | cut -d: -f1)
expect_failure 1 "$tmp/slack.yaml:$line:[0-9]+: section 'cluster': field 'staleness' applies only with consistency 'ssp', not with consistency 'bsp'" \
  "$bin/dl-plan" "$tmp/slack.yaml"
expect_failure 1 "section 'cluster': field 'easgd_tau' must be at least 1, got 0" \
  "$bin/dl-plan" "$mlp" --set cluster.consistency=easgd --set cluster.easgd_tau=0
ok "a slack without ssp, or an easgd period below 1, is refused naming the field"

expect_failure 2 "" "$bin/dl-plan"
ok "no job file is a usage error (exit 2)"
expect_failure 2 "--keep: must be more than 0, not 0" "$bin/dl-server" --plan none.json --keep 0
expect_failure 2 "--id: must be 0 or more, not -2" "$bin/dl-worker" --plan none.json --id -2
expect_failure 2 "--threads: 'x' is not a number" "$bin/dl-worker" --plan none.json --threads x
ok "a count out of its range says the range (exit 2)"

# Plans.
port=$(fresh_port)
"$bin/dl-plan" "$mlp" --base-port "$port" --set train.steps=20 --set cluster.timeout_ms=1500 \
  --set cluster.nworkers_per_group=1 -o "$tmp/plan.json"
sed 's/"count": 200704/"count": 200703/' "$tmp/plan.json" >"$tmp/edited.json"
expect_failure 1 "does not match the recorded" "$bin/dl-worker" --plan "$tmp/edited.json" --shards "$(shards_for 1)"
ok "an edited plan is refused by its content hash"

# A plan whose groups share layers needs all of a group's workers.
"$bin/dl-plan" "$mlp" --strategy model --group-size 2 -o "$tmp/model.json"
expect_failure 1 "the plan runs groups of 2 workers: it cannot run standalone" \
  "$bin/dl-worker" --plan "$tmp/model.json" --standalone --shards "$(shards_for 1)"
# A batch norm synchronised over the workers needs BSP; standalone, one
# worker has nothing to exchange and trains alone.
sed 's/{name: relu1, type: relu, srclayers: fc1}/{name: bn1, type: batch_norm, srclayers: fc1, sync: true}\n    - {name: relu1, type: relu, srclayers: bn1}/' \
  "$mlp" >"$tmp/sync-bn.yaml"
"$bin/dl-plan" "$tmp/sync-bn.yaml" -o "$tmp/sync-bn.json"
"$bin/dl-worker" --plan "$tmp/sync-bn.json" --standalone --no-eval --steps 5 --shards "$(shards_for 1)" \
  >/dev/null 2>"$tmp/sync-standalone.log" || fail "a synced plan did not train standalone: $(cat "$tmp/sync-standalone.log")"
expect_failure 1 "layer 'bn1' sums its statistics over the workers \(sync: true\), which needs cluster.consistency bsp" \
  "$bin/dl-plan" "$tmp/sync-bn.yaml" --set cluster.consistency=async --set cluster.nworker_groups=2 \
  --set cluster.nworkers_per_group=1
# A layer that cannot split its features is refused naming it.
sed 's/{name: loss, type: softmax_loss,/{name: loss, type: softmax_loss, partition_dim: 1,/' "$mlp" >"$tmp/loss-split.yaml"
expect_failure 1 "layer 'loss': partition_dim 1 cannot be honoured: the loss is computed where its records' labels are" \
  "$bin/dl-plan" "$tmp/loss-split.yaml"
ok "a model-parallel plan needs its group; a synced batch norm needs BSP; a loss split over features is refused"

# Shards: a corrupted record is refused naming the file and the record.
cp -r "$(shards_for 1)" "$tmp/shards"
# Header: 8 magic + 4 version + 4 record size + 8 count + 4 rank + 3*4 dims + 4 crc = 44 bytes;
# records are 784 pixels + label + crc = 792 bytes. Flip a pixel of record 5.
printf '\xff' | dd of="$tmp/shards/train-00000.shard" bs=1 seek=$((44 + 5 * 792 + 300)) conv=notrunc status=none
rehash_manifest "$tmp/shards" train-00000.shard
# (a whole epoch: the first pass takes its batches in an order of train.seed's)
expect_failure 1 "train-00000.shard': record 5: checksum mismatch" \
  "$bin/dl-worker" --plan "$tmp/plan.json" --standalone --shards "$tmp/shards" --steps 940
ok "a corrupted shard record is refused naming the file and the record"

# A batch too large for memory: the worker names the batch and the bytes. ulimit -v bounds its
# address space, which ASan's shadow memory needs far more of: the sanitized build leaves it out.
if grep -q '^SHOAL_FUZZ:BOOL=ON\|^SHOAL_SANITIZE:BOOL=ON' "$bin/CMakeCache.txt"; then
  echo "skipped under the sanitizers: a worker out of memory (ulimit -v leaves ASan no room)"
else
  "$bin/dl-plan" "$root/configs/fashion-mlp.yaml" --set train.batch_size=400000 -o "$tmp/huge.json" >/dev/null
  # shellcheck disable=SC2016  # the inner shell expands them
  expect_failure 1 "out of memory allocating the features of a batch of 400000 records a worker: about [0-9]+ MiB" \
    bash -c 'ulimit -v 3000000 && exec "$0" --plan "$1" --standalone --shards "$2" --steps 1' \
    "$bin/dl-worker" "$tmp/huge.json" "$(shards_for 1)"
  ok "a batch too large for memory is named, with the bytes it needed"
fi

# A server that never answers: the worker gives up after the plan's timeout,
# naming the endpoint (exit 3).
expect_failure 3 "server 'tcp://127.0.0.1:$port' did not (take 'join' within 1500|answer 'join' within 2500) ms" \
  "$bin/dl-worker" --plan "$tmp/plan.json" --shards "$(shards_for 1)"
ok "a worker whose server never answers exits naming the endpoint"

# A port already in use: the second server is refused (exit 3); the first keeps serving.
"$bin/dl-server" --plan "$tmp/plan.json" >"$tmp/first.jsonl" 2>"$tmp/first.log" &
first=$!
wait_serving "$tmp/first.log"
expect_failure 1 "cannot listen on 'tcp://127.0.0.1:$port': address already in use" \
  "$bin/dl-server" --plan "$tmp/plan.json"
ok "a second server on a port in use is refused (exit 1: not a peer's fault, never retried)"
"$bin/dl-worker" --plan "$tmp/plan.json" --shards "$(shards_for 1)" --no-eval >/dev/null ||
  fail "the first server stopped serving"
wait "$first" || fail "the first server failed: $(cat "$tmp/first.log")"
ok "the first server served a whole run and exited cleanly"

# A server whose workers never come gives up after the timeout.
expect_failure 3 "no request from any worker for 1500 ms" "$bin/dl-server" --plan "$tmp/plan.json"
ok "a server with no workers gives up after the timeout"

# Checkpoints: a flipped byte is reported naming the tensor.
"$bin/dl-server" --plan "$tmp/plan.json" --checkpoint-dir "$tmp/ckpt" >/dev/null 2>&1 &
"$bin/dl-worker" --plan "$tmp/plan.json" --shards "$(shards_for 1)" --no-eval >/dev/null
wait
ckpt=$(final_ckpt "$tmp")
"$bin/dl-ckpt" verify "$ckpt" >/dev/null || fail "a fresh checkpoint does not verify"
size=$(stat -c %s "$ckpt")
printf '\x01' | dd of="$ckpt" bs=1 seek=$((size - 10)) conv=notrunc status=none
expect_failure 1 "tensor 'fc3.bias@velocity' \(bytes [0-9]+\.\.[0-9]+\): checksum mismatch" "$bin/dl-ckpt" verify "$ckpt"
ok "a flipped checkpoint byte is reported naming the tensor and its bytes"
