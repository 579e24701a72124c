#!/usr/bin/env bash
# dl-plan's real outputs validate against schemas/plan.schema.json, and the
# schema is strict enough to refuse a plan that is wrong.
. "$(dirname "$0")/lib.sh"

for job in fashion-mlp fashion-cnn cifar10-cnn cifar10-singa resnet20; do
  "$bin/dl-plan" "$root/configs/$job.yaml" -o "$tmp/$job.json" || fail "dl-plan $job"
  validate_plan "$tmp/$job.json" || fail "$job's plan does not validate"
  ok "the $job plan validates against the schema"
done
# The plan names the commit the build is at (found at every build, not once
# when the build was configured), "-dirty" where tracked files changed.
if head=$(git -C "$root" rev-parse --short HEAD 2>/dev/null); then
  commit=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['commit'])" "$tmp/fashion-mlp.json")
  [[ "$commit" == "$head" || "$commit" == "$head-dirty" ]] || fail "the plan names commit '$commit'; the tree is at $head"
  ok "the plan names the commit the tree is at ($commit)"
fi
"$bin/dl-plan" "$root/configs/fashion-cnn.yaml" --set cluster.nservers_per_group=3 --set cluster.slice_floats=100000 \
  --set cluster.consistency=async --endpoints tcp://127.0.0.1:7001,tcp://127.0.0.1:7002,ipc:///tmp/shoal-s3 \
  -o "$tmp/sliced.json" || fail "dl-plan with endpoints"
validate_plan "$tmp/sliced.json" || fail "the sliced plan does not validate"
python3 - "$tmp/sliced.json" <<'PY' || fail "the sliced plan is inconsistent"
import json, sys
p = json.load(open(sys.argv[1]))
assert [s["endpoint"] for s in p["servers"]] == ["tcp://127.0.0.1:7001", "tcp://127.0.0.1:7002", "ipc:///tmp/shoal-s3"]
for param in p["params"]:
    slices = [p["slices"][k] for k in param["slices"]]
    size = 1
    for d in param["shape"]: size *= d
    assert sum(s["count"] for s in slices) == size and all(s["param"] == param["name"] for s in slices)
    assert [s["offset"] for s in slices] == sorted(s["offset"] for s in slices)
assert {s["server"] for s in p["slices"]} == {0, 1, 2}
PY
ok "a plan over 3 given endpoints validates and its slices cover every parameter"

python3 -c "
import json, sys
p = json.load(open(sys.argv[1])); p['layers'][0]['partition_dim'] = 2
json.dump(p, open(sys.argv[2], 'w'))" "$tmp/fashion-mlp.json" "$tmp/bad.json"
! validate_plan "$tmp/bad.json" 2>/dev/null || fail "the schema accepts partition_dim 2"
ok "the schema refuses a layer with partition_dim 2"

expect_failure 1 "the job has 1 servers but 2 endpoints were given" \
  "$bin/dl-plan" "$root/configs/fashion-mlp.yaml" --endpoints tcp://127.0.0.1:1,tcp://127.0.0.1:2
ok "endpoints that do not match the servers are refused"
