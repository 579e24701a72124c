#!/usr/bin/env bash
# dl-top against a live run (2 servers, 2 workers, BSP): its frames follow
# the run from its servers' own stats (versions and counters never go back,
# rates are the counters' differences over the interval, the slowest worker
# and its lag are the workers' steps', the last checkpoint one the servers
# wrote), nothing in them passes what the servers report when they end, a
# table on request, and it ends by itself when the job does.
. "$(dirname "$0")/lib.sh"

run=$tmp/run
SHOAL_BIN=$bin "$root/scripts/train-local.sh" --run-dir "$run" --no-eval "$root/configs/fashion-mlp.yaml" \
  cluster.nservers_per_group=2 train.steps=4000 train.checkpoint_every=500 data.shards="$(shards_for 2)" \
  >/dev/null 2>"$tmp/train.log" &
train=$!
for _ in $(seq 200); do
  [[ -s "$run/server-0.log" ]] && break
  sleep 0.05
done
"$bin/dl-top" "$run/plan.json" --json --interval 0.25 >"$tmp/top.jsonl" 2>"$tmp/top.err" &
top=$!
"$bin/dl-top" "$run/plan.json" --once >"$tmp/table.txt" || fail "dl-top --once: $(cat "$tmp/table.txt")"
grep -q "^server endpoint" "$tmp/table.txt" && grep -q "^worker steps: [0-9]* [0-9]*" "$tmp/table.txt" ||
  fail "dl-top's table: $(cat "$tmp/table.txt")"
wait "$train" || fail "the run failed: $(tail -n 5 "$tmp/train.log")"
wait "$top" || fail "dl-top did not end well with the job: $(cat "$tmp/top.err")"
grep -q "the job has ended" "$tmp/top.err" || fail "dl-top did not say the job ended: $(cat "$tmp/top.err")"
ok "dl-top --once prints a table; dl-top --json follows the run and ends with it"

python3 - "$tmp/top.jsonl" "$run" <<'PY' || fail "dl-top's frames against the servers' stats (above)"
import json, sys
frames = [json.loads(l) for l in open(sys.argv[1])]
final = [[json.loads(l) for l in open(f"{sys.argv[2]}/server-{i}.jsonl") if l.startswith("{")][-1] for i in (0, 1)]
live = [f for f in frames if f["reachable"] == 2]
assert len(live) >= 4, f"{len(live)} frames with both servers"
counters = ("version", "updates_received", "bytes_in", "bytes_out", "checkpoints")
for f in live:
    assert [s["server"] for s in f["servers"]] == [0, 1]
    steps = f["worker_steps"]
    assert len(steps) == 2 and f["lag"] == max(steps) - min(steps) and steps[f["slowest_worker"]] == min(steps), f
    for s, end in zip(f["servers"], final):
        for c in counters:  # nothing passes what the server counted in the end
            assert s[c] <= end[c], (c, s[c], end[c])
        assert s["last_checkpoint_step"] is None or (s["last_checkpoint_step"] % 500 == 0 and
                                                    s["last_checkpoint_step"] <= s["version"]), s
    assert f["version"] == max(s["version"] for s in f["servers"])
for a, b in zip(live, live[1:]):
    for sa, sb in zip(a["servers"], b["servers"]):
        for c in counters:
            assert sb[c] >= sa[c], (c, sa[c], sb[c])
        for rate, c in (("updates_per_s", "updates_received"), ("bytes_in_per_s", "bytes_in"),
                        ("bytes_out_per_s", "bytes_out"), ("steps_per_s", "version")):
            got = sb[rate] * b["interval_s"]
            assert abs(got - (sb[c] - sa[c])) <= 1e-6 * max(1, sb[c]), (rate, got, sb[c] - sa[c])
assert any(s["updates_per_s"] > 0 for f in live[1:] for s in f["servers"]), "no progress seen"
assert final[0]["version"] == 4000 and final[0]["last_checkpoint_step"] == 4000, final[0]
print(f"  {len(live)} live frames, versions {live[0]['version']}..{live[-1]['version']} of 4000")
PY
ok "each frame agrees with the servers' own stats: counters, rates, workers' steps, lag, checkpoints"

python3 - "$run" <<'PY' || fail "where the time went, by the processes' own counters (above)"
import json, sys
done = [json.loads(l) for l in open(f"{sys.argv[1]}/worker-0.jsonl") if '"done"' in l][-1]
t = done["time_s"]
parts = t["compute"] + t["encode"] + t["wait_servers"] + t["decode"]
assert all(t[k] >= 0 for k in t) and abs(parts - t["steps"]) < 1e-6 * t["steps"] + 1e-9, t
assert t["wait_servers"] > 0 and t["encode"] > 0 and t["decode"] > 0 and t["compute"] > 0, t
assert t["steps"] <= done["train_seconds"], (t, done["train_seconds"])
for i in (0, 1):
    s = [json.loads(l) for l in open(f"{sys.argv[1]}/server-{i}.jsonl") if l.startswith("{")][-1]
    assert s["handle_s"] > 0 and s["decode_s"] > 0 and 0 < s["encode_s"] <= s["handle_s"], s
print("  worker 0 per step (ms): " + ", ".join(f"{k} {1000 * v / 4000:.3f}" for k, v in t.items()))
PY
ok "worker 0's time_s parts add up to its steps' time; the servers count handling, encoding and decoding"

expect_failure 3 "no server of plan [0-9a-f]+ answered" "$bin/dl-top" "$run/plan.json" --once --timeout-ms 300
expect_failure 1 "fashion-mlp.yaml.: not valid JSON at byte 1" "$bin/dl-top" "$root/configs/fashion-mlp.yaml" --once
ok "dl-top names what is wrong: no server answering, a file that is not a plan"
