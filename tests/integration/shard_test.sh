#!/usr/bin/env bash
# Integration test for dl-shard on the real Fashion-MNIST.
# Usage: shard_test.sh BUILD_DIR REPO_ROOT
set -euo pipefail

build=${1:?usage: shard_test.sh BUILD_DIR REPO_ROOT}
root=${2:?usage: shard_test.sh BUILD_DIR REPO_ROOT}
shard="$build/dl-shard"
schema="$root/schemas/manifest.schema.json"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. Real data, two shards: summary line, manifest valid against the schema.
"$shard" --dataset fashion-mnist --out "$tmp/fm" --shards 2 --seed 7 >"$tmp/summary.json" \
  || fail "dl-shard on fashion-mnist exited $?"
python3 - "$tmp/summary.json" <<'PY' || fail "summary line"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
s = json.loads(lines[0])
assert s["shards"] == 2 and s["records_per_shard"] == [30000, 30000], s
assert s["test_records"] == 10000 and s["commit"], s
PY
echo "ok - dl-shard writes 2 shards and prints one JSON summary line"

python3 - "$schema" "$tmp/fm" "$build/tests/fnv1a64" <<'PY' || fail "manifest"
import json, os, subprocess, sys, jsonschema
schema = json.load(open(sys.argv[1]))
d, fnv_tool = sys.argv[2:]
m = json.load(open(os.path.join(d, "manifest.json")))
jsonschema.validate(m, schema, cls=jsonschema.Draft202012Validator)
assert sum(s["records"] for s in m["train"]) == 60000 == m["train_records"], m
assert m["test"]["records"] == 10000, m
assert m["classes"] == 10 and m["record_shape"] == [1, 28, 28] and m["seed"] == 7, m
def fnv1a64(data):
    # Standard FNV-1a 64, as lib/core/hash.cpp computes it.
    h = 14695981039346656037
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h
sums = set()
for s in m["train"] + [m["test"]]:
    data = open(os.path.join(d, s["file"]), "rb").read()
    # The test shard against this oracle, the others against the build's own hash (the oracle is slow).
    h = fnv1a64(data) if s is m["test"] else subprocess.run([fnv_tool, os.path.join(d, s["file"])],
                                                           capture_output=True, text=True, check=True).stdout.strip()
    assert h == s["fnv1a64"], s["file"]
    sums.add(s["fnv1a64"])
    assert len(data) == 44 + s["records"] * (784 + 8), s["file"]
assert len(sums) == 3, "equal-size shards share a checksum"
PY
echo "ok - manifest.json validates against the schema; 60000 train and 10000 test records"

# 2. A bad shard count is a usage error.
set +e
"$shard" --dataset fashion-mnist --out "$tmp/bad" --shards 0 >/dev/null 2>"$tmp/err"
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "--shards 0 exited $rc, want 2"
echo "ok - --shards 0 exits 2"

# 3. A missing source directory is a runtime failure naming the path.
set +e
"$shard" --dataset fashion-mnist --source "$tmp/no-such-dir" --out "$tmp/bad" --shards 2 \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "missing --source exited $rc, want 1"
grep -q "^dl-shard: error: .*'$tmp/no-such-dir'" "$tmp/err" || fail "message: $(cat "$tmp/err")"
[ ! -s "$tmp/out" ] || fail "stdout not empty on failure"
echo "ok - missing --source exits 1 naming the path"
