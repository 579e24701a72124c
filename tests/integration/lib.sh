# shellcheck shell=bash
# Shared by the integration tests: sourced as `. lib.sh BUILD_DIR REPO_ROOT`.
# Gives: $bin, $root, $tmp (removed at exit, with every process we started),
# fail, ok, expect_failure, peak_mb, fresh_port, wait_serving, shards_for, run_logs, kill_worker_at,
# same_bits, deep_mlp_job, field.
set -euo pipefail

bin=$(cd "${1:?usage: TEST BUILD_DIR REPO_ROOT}" && pwd)
root=$(cd "${2:?usage: TEST BUILD_DIR REPO_ROOT}" && pwd)
tmp=$(mktemp -d)
cleanup() {
  local pids
  pids=$(jobs -p)
  # shellcheck disable=SC2086  # one word per process
  [[ -z "$pids" ]] || kill $pids 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# The tests, and the scripts they start, call python3 hundreds of times: the
# interpreter PATH names is found once and exec'd from a script first on
# PATH, so that a version manager's shim (pyenv's) resolves it once, not on
# every call. Not a link: a virtual environment's interpreter knows its
# environment only when started by its own path.
python=$(python3 -c 'import sys; print(sys.executable)') || fail "no python3 on PATH"
mkdir "$tmp/python"
printf '#!/usr/bin/env bash\nexec %q "$@"\n' "$python" >"$tmp/python/python3"
chmod +x "$tmp/python/python3"
PATH=$tmp/python:$PATH

# Tests that make network namespaces or start Slurm's daemons need root;
# elsewhere they are skipped (exit 77, which ctest reports as skipped).
require_root() { ((EUID == 0)) || { echo "skipped: needs root"; exit 77; }; }
ok() { echo "ok - $* (${SECONDS}s)"; }

# expect_failure CODE PATTERN CMD...: CMD must exit CODE with PATTERN (grep -E) on stderr.
expect_failure() {
  local want=$1 pattern=$2 rc=0
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [[ $rc -eq $want ]] || fail "$* exited $rc, want $want; stderr: $(cat "$tmp/err")"
  grep -qE -- "$pattern" "$tmp/err" || fail "$*: stderr lacks /$pattern/: $(cat "$tmp/err")"
}

# peak_mb CMD...: runs CMD, its stdout and stderr to $tmp/out and $tmp/err;
# prints its exit status and its peak resident memory in MB.
peak_mb() {
  python3 - "$tmp/out" "$tmp/err" "$@" <<'PY'
import resource, subprocess, sys
with open(sys.argv[1], "w") as out, open(sys.argv[2], "w") as err:
    rc = subprocess.run(sys.argv[3:], stdout=out, stderr=err).returncode
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
PY
}

# A loopback port range nobody else in this test run is likely to use: below
# Linux's ephemeral ports (32768-60999), which outgoing connections take.
fresh_port() { echo $((10000 + (RANDOM * 32768 + RANDOM + $$) % 22000)); }

# wait_serving LOG: until the dl-server logging to LOG says it is serving (up to
# a minute: a sanitized build on a loaded machine starts slowly), so that a test
# with a short timeout does not count the server's start against its workers.
wait_serving() {
  local i
  for ((i = 0; i < 600; i++)); do
    grep -q serving "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "the server did not start serving within a minute: $(cat "$1")"
}

# shards_for N: a shard directory of Fashion-MNIST dealt N ways, shared by the
# tests of one build (dl-shard writes atomically, so concurrent tests agree).
shards_for() {
  local dir="$bin/test-shards/fashion-mnist-$1"
  [[ -f "$dir/manifest.json" ]] ||
    "$bin/dl-shard" --dataset fashion-mnist --out "$dir" --shards "$1" >/dev/null
  echo "$dir"
}

# final_ckpt DIR [SERVER]: the newest checkpoint of a server (0 unless named) in DIR/ckpt,
# the one a run writes at its end (runs also write sets as they go: train.checkpoint_seconds).
final_ckpt() { compgen -G "$1/ckpt/server-${2:-0}-step-*.ckpt" | sort | tail -n 1; }

# kill_worker_at RUN_DIR STEP W [SIGNAL]: once the train-local run in RUN_DIR has
# recorded STEP (worker 0's records; up to 30 s), send its worker W SIGNAL (KILL).
kill_worker_at() {
  for _ in $(seq 600); do
    grep -qs "\"step\":$2," "$1/worker-0.jsonl" && break
    sleep 0.05
  done
  pkill "-${4:-KILL}" -f "dl-worker --plan $1/plan.json --id $3 " || fail "no worker $3 to signal in $1"
}

# same_bits A B STEP: runs A and B (directories with a ckpt/) both end at STEP
# with server 0's parameters equal bit for bit.
same_bits() {
  "$bin/dl-ckpt" diff "$(final_ckpt "$1")" "$(final_ckpt "$2")" >"$2-diff.json" || fail "dl-ckpt diff $1 $2"
  jq -e --argjson s "$3" '.max_abs == 0 and .step_a == $s and .step_b == $s' "$2-diff.json" >/dev/null ||
    fail "$2 does not end as $1 did: $(head -c 400 "$2-diff.json")"
}

# run_logs DIR: the last lines of every process log of a train-local run,
# for a failure's message (what each process said before the run went wrong).
run_logs() {
  local log
  for log in "$1"/*.log; do
    [[ -f "$log" ]] && printf '\n--- %s:\n%s' "${log##*/}" "$(tail -n 6 "$log")"
  done
  return 0
}

# deep_mlp_job FILE: a deep MLP (twelve 512-unit layers, batch 64) written as
# a job, whose step holds far more data than any one pass.
deep_mlp_job() {
  python3 - "$1" <<'PY'
import sys
layers, src = ["{name: data, type: data, shape: [1, 28, 28]}"], "data"
for i in range(1, 13):
    layers += [f"{{name: fc{i}, type: fully_connected, srclayers: {src}, num_output: 512}}",
               f"{{name: relu{i}, type: relu, srclayers: fc{i}}}"]
    src = f"relu{i}"
layers += [f"{{name: out, type: fully_connected, srclayers: {src}, num_output: 10}}",
           "{name: loss, type: softmax_loss, srclayers: [out, data]}"]
open(sys.argv[1], "w").write("model:\n  layers:\n" + "".join(f"    - {l}\n" for l in layers) +
                             "train: {batch_size: 64, updater: momentum, learning_rate: 0.01, momentum: 0.9}\n")
PY
}

# rehash_manifest DIR FILE: records shard FILE's FNV-1a 64 in DIR/manifest.json
# anew, as anyone who edits a shard can: what is left to catch a changed
# record is the record's own CRC.
rehash_manifest() {
  local hash
  hash=$("$bin/tests/fnv1a64" "$1/$2") || fail "fnv1a64 $1/$2"
  python3 - "$1" "$2" "$hash" <<'PY'
import json, os, sys
d, name, h = sys.argv[1:]
m = json.load(open(os.path.join(d, "manifest.json")))
for s in m["train"] + [m["test"]]:
    if s["file"] == name:
        s["fnv1a64"] = h
json.dump(m, open(os.path.join(d, "manifest.json"), "w"), indent=2)
PY
}

# validate_plan FILE: FILE validates against schemas/plan.schema.json.
validate_plan() {
  python3 - "$root/schemas/plan.schema.json" "$1" <<'PY'
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
jsonschema.validate(json.load(open(sys.argv[2])), schema, cls=jsonschema.Draft202012Validator)
PY
}

# field FILE EXPR: evaluates a Python expression over the last JSON line of
# FILE whose "event" is the one named, e.g. field w.jsonl done "r['test_accuracy']".
field() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
path, event, expr = sys.argv[1:]
records = [json.loads(l) for l in open(path) if l.startswith("{")]
r = [x for x in records if x.get("event") == event][-1]
print(eval(expr))
PY
}
