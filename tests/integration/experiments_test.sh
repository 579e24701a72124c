#!/usr/bin/env bash
# Runs as files: tools that read one file take "-" for standard input and
# compose in pipelines; experiments/sweep's Makefile trains a small grid with
# make -j2, a second make redoes nothing, a wider grid trains only its new
# runs; dl-report's table, JSON, pictures, target and restarts, and its errors
# on bad records.
. "$(dirname "$0")/lib.sh"

# Pipelines: a job on standard input, a plan through check and relocate, a
# checkpoint on standard input.
"$bin/dl-plan" - <"$root/configs/fashion-mlp.yaml" | jq -e '.layers | length == 7' >/dev/null ||
  fail "dl-plan - did not read the job from standard input"
"$bin/dl-plan" "$root/configs/fashion-mlp.yaml" --set train.steps=30 --set train.checkpoint_every=30 |
  "$bin/dl-plan" relocate - --base-port "$(fresh_port)" >"$tmp/plan.json"
"$bin/dl-plan" check - <"$tmp/plan.json" | jq -e '.ok and .workers == 2 and .servers == 1' >/dev/null ||
  fail "dl-plan check - on a relocated plan"
"$bin/dl-server" --plan - --checkpoint-dir "$tmp/ckpt" <"$tmp/plan.json" >"$tmp/server.jsonl" 2>"$tmp/server.log" &
for w in 0 1; do
  "$bin/dl-worker" --plan "$tmp/plan.json" --id $w --shards "$(shards_for 2)" --no-eval >/dev/null 2>"$tmp/worker-$w.log" &
done
wait || fail "a pipeline-started process failed: $(cat "$tmp"/*.log)"
ckpt=$(final_ckpt "$tmp")
"$bin/dl-ckpt" inspect - <"$ckpt" | jq -e '.[0].step == 30' >/dev/null || fail "dl-ckpt inspect - on a checkpoint"
ok "dl-plan - | dl-plan relocate - | dl-plan check -, dl-server --plan -, dl-ckpt inspect - read standard input"

# A 2 x 2 grid (BSP and async, 1 and 2 workers), short runs, two at a time.
grid=(-C "$root/experiments/sweep" OUT="$tmp/sweep" BIN="$bin" RATES=0.05 WORKERS="1 2"
      COMMON="train.steps=60 train.display_every=20 train.eval_every=30")
make -j2 "${grid[@]}" report >"$tmp/make1.log" 2>&1 || fail "make -j2 report: $(tail -n 20 "$tmp/make1.log")"
for run in bsp-w1-lr0.05 bsp-w2-lr0.05 async-w1-lr0.05 async-w2-lr0.05; do
  for f in plan.json run/run.json result.json; do
    [[ -s "$tmp/sweep/$run/$f" ]] || fail "no $run/$f"
  done
  grep -qE "^$run +done +60 " "$tmp/sweep/report/report.txt" || fail "no row for $run: $(cat "$tmp/sweep/report/report.txt")"
done
for f in loss.png loss.svg accuracy.png accuracy.svg; do
  [[ -s "$tmp/sweep/report/$f" ]] || fail "no report/$f"
done
[[ "$(head -c 4 "$tmp/sweep/report/accuracy.png" | tail -c 3)" == PNG ]] || fail "accuracy.png is not a PNG"
grep -q "<svg" "$tmp/sweep/report/loss.svg" || fail "loss.svg is not SVG"
python3 - "$tmp/sweep/bsp-w2-lr0.05/result.json" "$tmp/sweep/bsp-w2-lr0.05/run/worker-0.jsonl" <<'PY' ||
import json, sys
row = json.load(open(sys.argv[1]))[0]
done = [json.loads(l) for l in open(sys.argv[2]) if '"done"' in l][-1]
assert row["run"] == "bsp-w2-lr0.05" and row["status"] == "done", row
assert row["test_accuracy"] == done["test_accuracy"] and row["ms_per_step"] == done["ms_per_step_median"], row
assert row["steps"] == 60 and row["restarts"] == 0 and row["bytes_per_step"] > 0 and row["wall_s"] > 0, row
PY
  fail "result.json does not match the run's own records"
ok "make -j2 report trains a 2 x 2 grid; report.txt, result.json from the runs' records, PNG and SVG"

stamps() { stat -c '%n %Y' "$tmp"/sweep/*/run/run.json; }
before=$(stamps)
make "${grid[@]}" report >"$tmp/make2.log" 2>&1 || fail "a second make: $(tail -n 20 "$tmp/make2.log")"
[[ "$(stamps)" == "$before" ]] || fail "a second make redid runs: $(diff <(echo "$before") <(stamps))"
! grep -q "train-local.sh" "$tmp/make2.log" || fail "a second make started a run"
make "${grid[@]}" RATES="0.05 0.02" report >"$tmp/make3.log" 2>&1 || fail "a wider grid: $(tail -n 20 "$tmp/make3.log")"
[[ $(grep -c "train-local.sh --plan" "$tmp/make3.log") == 4 ]] || fail "the wider grid did not train exactly its 4 new runs"
[[ "$(stat -c '%n %Y' "$tmp"/sweep/*-lr0.05/run/run.json)" == "$before" ]] || fail "the wider grid redid old runs"
[[ $(grep -c " done " "$tmp/sweep/report/report.txt") == 8 ]] || fail "the report lacks runs: $(cat "$tmp/sweep/report/report.txt")"
ok "a second make redoes nothing; a wider grid trains only its 4 new runs and reports all 8"

# --target: the first evaluation at or above it (the grid evaluates at step 30),
# none where the run never got there.
one=$tmp/sweep/bsp-w2-lr0.05/run
"$bin/dl-report" "$one" --json --target 0.01 | jq -e '.[0] | .to_target_step == 30 and .to_target_s > 0' >/dev/null ||
  fail "--target 0.01 is not reached at the first evaluation: $("$bin/dl-report" "$one" --json --target 0.01)"
"$bin/dl-report" "$one" --json --target 1 | jq -e '.[0] | .to_target_step == null and .to_target_s == null' >/dev/null ||
  fail "--target 1 is reached: $("$bin/dl-report" "$one" --json --target 1)"
header=$("$bin/dl-report" "$one" --target 0.01)
header=${header%%$'\n'*}
[[ $header =~ to_target_step\ +to_target_s$ ]] || fail "the table has no target columns: $header"
expect_failure 2 "--target 1.5: a test accuracy" "$bin/dl-report" "$one" --target 1.5
# A restarted worker's second life (its records again, its clock from 0): two
# lives, the restart marked on the pictures.
cp -r "$one" "$tmp/restarted"
grep -E '"event":"(step|eval|done)"' "$one/worker-0.jsonl" >>"$tmp/restarted/worker-0.jsonl"
"$bin/dl-report" "$tmp/restarted" --json --out "$tmp/restarted-report" 2>/dev/null | jq -e '.[0].lives == 2' >/dev/null ||
  fail "the restarted run does not count two lives"
grep -q "restarted: restarted" "$tmp/restarted-report/loss.svg" || fail "loss.svg does not mark the restart"
ok "dl-report --target: the first evaluation that reached it, or none; a restart is a new life, marked"

# --layers: each worker's time per layer, which adds up to no more than its
# steps took; the MLP's fully connected layers computed at a rate.
"$bin/dl-report" "$one" --layers --json >"$tmp/layers.json" || fail "dl-report --layers failed"
python3 - "$tmp/layers.json" "$one" <<'PY' ||
import json, sys
[run] = json.load(open(sys.argv[1]))
assert [w["worker"] for w in run["workers"]] == [0, 1], run
for w in run["workers"]:
    done = [json.loads(l) for l in open(f"{sys.argv[2]}/worker-{w['worker']}.jsonl") if '"done"' in l][-1]
    assert w["steps"] == done["layer_steps"] == 59 and done["steps_timed"] == 60, (w["steps"], done)
    layers = w["layers"]
    spent = sum(l["forward_ms"] + l["backward_ms"] for l in layers) * w["steps"] / 1000
    assert 0 < spent <= done["time_s"]["steps"], (spent, done["time_s"])
    dense = [l for l in layers if l["type"] == "fully_connected"]
    assert dense and all(l["forward_ms"] > 0 and l["gflops_per_s"] > 0 for l in dense), layers
PY
  fail "dl-report --layers does not match the workers' records: $(cat "$tmp/layers.json")"
grep -q "^bsp-w2-lr0.05: worker 1, 59 steps timed" <("$bin/dl-report" "$one" --label bsp-w2-lr0.05 --layers) ||
  fail "dl-report --layers has no table for worker 1"
expect_failure 2 "it takes neither --out nor --target" "$bin/dl-report" "$one" --layers --target 0.5
cp -r "$one" "$tmp/bad-layers"
sed -i 's/"backward_s":/"backward_s":-1,"was":/' "$tmp/bad-layers/worker-1.jsonl"
expect_failure 1 "worker-1.jsonl:[0-9]+: layer data's times and operations are negative" \
  "$bin/dl-report" "$tmp/bad-layers" --layers
sed -i 's/"backward_s":-1,/"backward_s":"x",/' "$tmp/bad-layers/worker-1.jsonl"
expect_failure 1 "worker-1.jsonl:[0-9]+: layer data's 'backward_s' is \"x\", not a number" \
  "$bin/dl-report" "$tmp/bad-layers" --layers
ok "dl-report --layers: per worker, each layer's ms a step, share and rate, within the steps' time"

# Bad input is named, with its file and line; nothing is drawn.
cp -r "$tmp/sweep/bsp-w1-lr0.05/run" "$tmp/bad"
echo '{"event": "step", "step": 80, "loss": "x", "elapsed_s": 1}' >>"$tmp/bad/worker-0.jsonl"
expect_failure 1 "worker-0.jsonl:[0-9]+: a 'step' record's 'loss' is \"x\", not a number" "$bin/dl-report" "$tmp/bad"
echo 'not json' >>"$tmp/bad/worker-0.jsonl"
expect_failure 1 "worker-0.jsonl:[0-9]+: not a JSON record" "$bin/dl-report" "$tmp/bad"
expect_failure 1 "nowhere/run.json: No such file" "$bin/dl-report" "$tmp/nowhere"
expect_failure 2 "2 --label for 1 runs" "$bin/dl-report" "$tmp/sweep/bsp-w1-lr0.05/run" --label a --label b
ok "dl-report names a bad record's file and line, a missing run.json, a label count that does not match"

# experiments/convnets, shortened: ResNet-20 on the first 512 Fashion-MNIST PNGs
# (4 steps a run) by one worker, BSP 2 x 64 with and without synchronised batch
# norm, and the PyTorch reference, all in one report with a target column.
convnets=(-C "$root/experiments/convnets" OUT="$tmp/convnets" BIN="$bin" EPOCHS=1 LIMIT=512 TARGET=0.1)
make "${convnets[@]}" report >"$tmp/convnets.log" 2>&1 || fail "experiments/convnets: $(tail -n 20 "$tmp/convnets.log")"
for run in w1 bsp2 bsp2-sync pytorch; do
  grep -qE "^$run +done +4 " "$tmp/convnets/report/report.txt" ||
    fail "no finished 4-step row for $run: $(cat "$tmp/convnets/report/report.txt")"
done
jq -e '[.job.model.layers[] | select(.type == "batch_norm" and .sync)] | length == 21' \
  "$tmp/convnets/bsp2-sync/plan.json" >/dev/null || fail "bsp2-sync's plan does not synchronise its 21 batch norms"
jq -e '.job.data.random_crop.pad == 6 and .job.data.center_crop == 32 and .job.train.lr_schedule.every == 4' \
  "$tmp/convnets/w1/plan.json" >/dev/null || fail "w1's plan lacks the recipe's overrides"
ok "experiments/convnets: ResNet-20 from PNGs, 1 x 128, BSP 2 x 64 with and without sync batch norm, and PyTorch, in one report"
