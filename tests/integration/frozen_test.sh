#!/usr/bin/env bash
# Frozen layers (lr_mult 0) through scripts/train-local.sh: their parameters
# are read as the workers join and never exchanged. With every layer frozen,
# each of the two servers holds frozen slices only and no worker exchanges
# anything: under every consistency model the run still ends, the servers'
# versions still follow the workers' steps (their checkpoints make one
# complete set), nothing travels, and the values are the initial ones.
. "$(dirname "$0")/lib.sh"

cat >"$tmp/frozen.yaml" <<'YAML'
name: frozen
model:
  layers:
    - {name: data, type: data, shape: [1, 28, 28]}
    - {name: fc1, type: fully_connected, srclayers: data, num_output: 32, lr_mult: 0}
    - {name: relu1, type: relu, srclayers: fc1}
    - {name: fc2, type: fully_connected, srclayers: relu1, num_output: 10, lr_mult: 0}
    - {name: loss, type: softmax_loss, srclayers: [fc2, data]}
train: {batch_size: 16, steps: 20, learning_rate: 0.1, display_every: 5, checkpoint_every: 10}
cluster: {nworkers_per_group: 2, nservers_per_group: 2, timeout_ms: 20000}
YAML

for model in bsp async ssp easgd; do
  extra=()
  [[ $model == ssp ]] && extra=(cluster.staleness=1)
  SHOAL_BIN=$bin RUN_DIR=$tmp/$model BASE_PORT=$(fresh_port) timeout 120 "$root/scripts/train-local.sh" \
    "$tmp/frozen.yaml" cluster.consistency=$model data.shards="$(shards_for 2)" "${extra[@]}" \
    >"$tmp/$model.out" 2>"$tmp/$model.err" || fail "$model: the frozen run failed: $(tail -5 "$tmp/$model.err")"
  for w in 0 1; do
    sent=$(field "$tmp/$model/worker-$w.jsonl" step "r['bytes_per_step']['param_bytes_out'] + r['bytes_per_step']['param_bytes_in']")
    [[ $sent == 0.0 ]] || fail "$model: worker $w exchanged $sent bytes a step of frozen parameters"
  done
  "$bin/dl-ckpt" export "$tmp/$model/ckpt" -o "$tmp/$model.npz" >/dev/null 2>"$tmp/$model.export.err" ||
    fail "$model: the servers' checkpoints make no complete set: $(cat "$tmp/$model.export.err")"
done
for model in async ssp easgd; do  # the archives are written in one order, without dates: equal bytes, equal values
  cmp -s "$tmp/bsp.npz" "$tmp/$model.npz" || fail "$model's frozen values differ from bsp's: they moved"
done
ok "every layer frozen, two servers of frozen slices: bsp, async, ssp and easgd end, nothing travels, the checkpoints make a set of the initial values"
