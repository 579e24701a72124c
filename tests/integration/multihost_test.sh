#!/usr/bin/env bash
# Multi-host: three emulated hosts (network namespaces on a bridge, 1 Gbit/s
# links); the server listens on host 1's address, the workers run on hosts 2
# and 3 and reach it over tcp://; plain and TLS. Needs root (ip, tc).
. "$(dirname "$0")/lib.sh"
require_root

cluster=m$$
cluster=${cluster:0:8}
slow=${cluster:0:7}s
down() {
  "$root/scripts/netns-cluster.sh" down "$cluster" || true
  "$root/scripts/netns-cluster.sh" down "$slow" 2>/dev/null || true
  cleanup
}
trap down EXIT
mapfile -t hosts < <("$root/scripts/netns-cluster.sh" up "$cluster" 3 1gbit)
server_addr=${hosts[0]#* }
ok "three hosts up: ${hosts[*]}"

# run NAME SCHEME [override...]: server on host 1, workers on hosts 2 and 3
# (of $on, at $on_addr: the 1 Gbit/s cluster unless said).
on=$cluster on_addr=$server_addr
run() {
  local scheme=$2 port dir=$tmp/$1
  shift 2
  local sets=()
  for o in "$@"; do sets+=(--set "$o"); done
  port=$(fresh_port)
  mkdir -p "$dir"
  "$bin/dl-plan" "$root/configs/fashion-mlp.yaml" --strategy data --endpoints "$scheme://$on_addr:$port" \
    --set train.steps=100 --set cluster.timeout_ms=20000 "${sets[@]}" -o "$dir/plan.json"
  "$root/scripts/netns-cluster.sh" exec "$on" 1 "$bin/dl-server" --plan "$dir/plan.json" \
    >"$dir/server.jsonl" 2>"$dir/server.log" &
  local server=$!
  "$root/scripts/netns-cluster.sh" exec "$on" 2 "$bin/dl-worker" --plan "$dir/plan.json" --id 0 \
    --shards "$(shards_for 2)" >"$dir/w0.jsonl" 2>"$dir/w0.log" &
  local w0=$!
  "$root/scripts/netns-cluster.sh" exec "$on" 3 "$bin/dl-worker" --plan "$dir/plan.json" --id 1 \
    --shards "$(shards_for 2)" --no-eval >"$dir/w1.jsonl" 2>"$dir/w1.log" || fail "worker 1 failed: $(cat "$dir/w1.log")"
  wait "$w0" || fail "worker 0 failed: $(cat "$dir/w0.log")"
  wait "$server" || fail "the server failed: $(cat "$dir/server.log")"
  field "$dir/w0.jsonl" "done" "r['test_accuracy']" >/dev/null || fail "worker 0 reported no accuracy"
}

run plain tcp
ok "a server on host 1 and workers on hosts 2 and 3 train over tcp://$server_addr"

"$root/scripts/make-certs.sh" "$tmp/certs" 1 2 2>/dev/null
run tls tls+tcp cluster.tls_dir="$tmp/certs"
ok "the same over tls+tcp:// with mutual authentication"

# A done's reply carries the worker's whole share of the parameters (the
# MLP's 0.9 MB), about 2 s over a 4 Mbit/s link: the server, its work over,
# stays until the workers have read it and hung up.
mapfile -t slow_hosts < <("$root/scripts/netns-cluster.sh" up "$slow" 3 4mbit)
on=$slow on_addr=${slow_hosts[0]#* }
run slow tcp train.steps=1
on=$cluster on_addr=$server_addr
ok "over 4 Mbit/s links the workers read their final parameters in full before the server exits"

# A worker on another host cannot reach a server that listens on loopback only.
port=$(fresh_port)
"$bin/dl-plan" "$root/configs/fashion-mlp.yaml" --endpoints "tcp://127.0.0.1:$port" --set train.steps=5 \
  --set cluster.nworkers_per_group=1 --set cluster.timeout_ms=20000 -o "$tmp/loopback.json"
"$root/scripts/netns-cluster.sh" exec "$cluster" 1 "$bin/dl-server" --plan "$tmp/loopback.json" >/dev/null 2>&1 &
expect_failure 3 "did not take 'join'" "$root/scripts/netns-cluster.sh" exec "$cluster" 2 \
  "$bin/dl-worker" --plan "$tmp/loopback.json" --shards "$(shards_for 1)" --timeout-ms 1500
ok "a server's default loopback address is not reachable from another host"

# train-local places a hybrid plan's workers on the hosts (features between
# them over the hosts' links) and its servers on the head.
SHOAL_BIN=$bin RUN_DIR=$tmp/placed BASE_PORT=$(fresh_port) CLUSTER=$cluster STRATEGY=model GROUP_SIZE=2 \
  "$root/scripts/train-local.sh" "$root/configs/fashion-mlp.yaml" train.steps=200 cluster.timeout_ms=20000 \
  2>"$tmp/placed.log" || fail "train-local on the hosts failed: $(tail -n 5 "$tmp/placed.log")"
grep -q "tcp://10\.250\.[0-9]*\.254:" "$tmp/placed/plan.json" || fail "the servers are not on the head"
python3 - "$tmp/placed/plan.json" <<'PY' || fail "the workers are not on hosts 1 and 2"
import json, sys
plan = json.load(open(sys.argv[1]))
hosts = [w["endpoint"].split("//")[1].split(":")[0].split(".")[-1] for w in plan["workers"]]
assert hosts == ["1", "2"], hosts
PY
grep -q "test accuracy 0\.[6-9]" "$tmp/placed.log" || fail "no accuracy: $(tail -n 3 "$tmp/placed.log")"
ok "train-local runs a model-parallel group on two hosts, servers on the head: $(grep -o 'test accuracy [0-9.]*' "$tmp/placed.log")"

# AllReduce on the hosts: server i lives in worker i's process on worker i's
# host; each worker reaches its own in-process and the other's over the link.
SHOAL_BIN=$bin RUN_DIR=$tmp/allreduce BASE_PORT=$(fresh_port) CLUSTER=$cluster \
  "$root/scripts/train-local.sh" "$root/configs/fashion-mlp.yaml" train.steps=200 cluster.timeout_ms=20000 \
  cluster.nservers_per_group=2 cluster.server_worker_separate=false \
  >/dev/null 2>"$tmp/allreduce.log" || fail "AllReduce on the hosts failed: $(tail -n 5 "$tmp/allreduce.log")"
python3 - "$tmp/allreduce/plan.json" <<'PY' || fail "the servers are not on their workers' hosts"
import json, sys
plan = json.load(open(sys.argv[1]))
host = lambda e: e.split("//")[1].split(":")[0].split(".")[-1]
assert [host(s["endpoint"]) for s in plan["servers"]] == [host(w["endpoint"]) for w in plan["workers"]] == ["1", "2"], plan["servers"]
PY
grep -q "worker 1 hosts server 1 on tcp://10\.250\.[0-9]*\.2:" "$tmp/allreduce/worker-1.log" ||
  fail "worker 1 hosts no server on its host: $(cat "$tmp/allreduce/worker-1.log")"
grep -q "test accuracy 0\.[6-9]" "$tmp/allreduce.log" || fail "no accuracy: $(tail -n 3 "$tmp/allreduce.log")"
ok "AllReduce on two hosts: each worker hosts its server there: $(grep -o 'test accuracy [0-9.]*' "$tmp/allreduce.log")"
