#!/usr/bin/env bash
# One bad peer must not take a run down: while a BSP run of the MLP trains
# over loopback on 2 servers, a hostile peer sends each server 10000 malformed
# or mutated requests (tests/tools/hostile_peer.cpp: truncated, lying lengths,
# another plan's hash, wrong types, random bytes, impostor workers, far-future
# reads) and holds 8 connections half-open. The run ends with the undisturbed
# run's parameters, bit for bit; every hostile request is refused (a join as a
# live worker is told to wait, never admitted); the servers log the refusals
# rate-limited and their memory stays bounded.
. "$(dirname "$0")/lib.sh"

shards=$(shards_for 2)
requests=${HOSTILE_REQUESTS:-4000}
steps=$((requests * 3 / 10))  # the run lasts while the requests come

run() {  # run NAME [hostile]: a 2-server BSP run; servers' peak RSS in NAME/rss-<i>
  local dir=$tmp/$1 port
  port=$(fresh_port)
  mkdir -p "$dir"
  "$bin/dl-plan" "$root/configs/fashion-mlp.yaml" --base-port "$port" --set train.steps=$steps \
    --set cluster.nservers_per_group=2 --set cluster.slice_floats=50000 -o "$dir/plan.json"
  local pids=()
  for s in 0 1; do
    python3 - "$dir/rss-$s" "$bin/dl-server" --plan "$dir/plan.json" --id $s --checkpoint-dir "$dir/ckpt" \
      --incarnation "$1/server-$s" \
      >"$dir/server-$s.jsonl" 2>"$dir/server-$s.log" <<'PY' &
import resource, subprocess, sys
rc = subprocess.run(sys.argv[2:]).returncode
open(sys.argv[1], "w").write("%d %d\n" % (rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024))
sys.exit(rc)
PY
    pids+=($!)
  done
  for w in 0 1; do
    "$bin/dl-worker" --plan "$dir/plan.json" --id $w --shards "$shards" --no-eval >"$dir/w$w.jsonl" 2>"$dir/w$w.log" &
    pids+=($!)
  done
  if [[ "${2:-}" == hostile ]]; then
    # Once both workers have joined (a step is done), the hostile peer hits every server.
    for _ in $(seq 200); do grep -q '"step"' "$dir/w0.jsonl" 2>/dev/null && break; sleep 0.05; done
    local hash
    hash=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hash"])' "$dir/plan.json")
    for s in 0 1; do
      "$bin/tests/hostile_peer" "tcp://127.0.0.1:$((port + s))" "$hash" "$requests" $((s + 7)) >"$dir/hostile-$s.json" &
      pids+=($!)
    done
  fi
  for p in "${pids[@]}"; do wait "$p" || fail "$1: a process failed: $(tail -n 3 "$dir"/*.log)"; done
}

run calm
run attacked hostile
for s in 0 1; do
  python3 - "$tmp/attacked/hostile-$s.json" "$tmp/attacked/server-$s.jsonl" "$requests" <<'PY' ||
import json, sys
h = json.load(open(sys.argv[1]))
stats = [json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")][-1]
n = int(sys.argv[3])
# Every one answered with a refusal, but for reads (stats, parameters: anyone may read them)
# and joins as a live worker (told to wait: never admitted while that worker is connected).
assert h["sent"] == n and h["refused"] + h["waited"] + h["reads"] == n and h["answered"] == 0, h
assert h["unanswered"] == 0 and h["waited"] <= n // 13 + 1, h
assert stats["bad_requests"] >= h["refused"], stats["bad_requests"]
print(f"  server refused {h['refused']} of {h['sent']} ({h['reads']} reads answered, {h['waited']} joins as a live "
      f"worker told to wait), counted {stats['bad_requests']} bad requests")
PY
    fail "server $s: $(cat "$tmp/attacked/hostile-$s.json")"
  lines=$(grep -c "refused" "$tmp/attacked/server-$s.log" || true)
  ((lines < 300)) || fail "server $s logged $lines refusal lines for $requests bad requests (not rate-limited)"
  grep -q "more like it left out" "$tmp/attacked/server-$s.log" || fail "server $s does not say how many it left out"
  read -r rc mb <"$tmp/attacked/rss-$s"
  read -r _ calm_mb <"$tmp/calm/rss-$s"
  ((mb < calm_mb + 100)) || fail "server $s peaked at $mb MB under attack, $calm_mb MB without"
  echo "  server $s: $lines log lines, peak RSS $mb MB (undisturbed $calm_mb MB)"
done
"$bin/dl-ckpt" merge "$tmp/calm/ckpt" -o "$tmp/calm.ckpt" >/dev/null
"$bin/dl-ckpt" merge "$tmp/attacked/ckpt" -o "$tmp/attacked.ckpt" >/dev/null
"$bin/dl-ckpt" diff "$tmp/calm.ckpt" "$tmp/attacked.ckpt" >"$tmp/diff.json"
python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); sys.exit(0 if d["max_abs"] == 0.0 and d["step_b"] == int(sys.argv[2]) else 1)' \
  "$tmp/diff.json" "$steps" || fail "the attacked run's parameters differ: $(head -c 300 "$tmp/diff.json")"
ok "$requests hostile requests to each of 2 servers during a BSP run: all refused (joins as a live worker told to wait), rate-limited logs, bounded memory, parameters bit for bit"
