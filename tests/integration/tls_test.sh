#!/usr/bin/env bash
# TLS with mutual authentication (tls+tcp://, cluster.tls_dir): a run trains;
# a worker whose certificate another CA signed is refused; so is a plain
# tcp:// client, and a TLS client that reaches a server of the wrong name.
. "$(dirname "$0")/lib.sh"

"$root/scripts/make-certs.sh" "$tmp/certs" 1 2 2>/dev/null
"$root/scripts/make-certs.sh" "$tmp/other" 1 2 2>/dev/null

run=$tmp/run
SHOAL_BIN=$bin RUN_DIR=$run BASE_PORT=$(fresh_port) "$root/scripts/train-local.sh" \
  "$root/configs/fashion-mlp.yaml" cluster.tls_dir="$tmp/certs" train.steps=100 data.shards="$(shards_for 2)" \
  >"$tmp/out" 2>"$tmp/err" || fail "a TLS run failed: $(cat "$tmp/err")"
grep -q '"endpoint": "tls+tcp://127.0.0.1:' "$run/plan.json" || fail "the plan's endpoints are not tls+tcp://"
grep -q "train-local: done: test accuracy" "$tmp/err" || fail "no outcome: $(cat "$tmp/err")"
ok "a TLS run trains to the end"

# One plan, one server; the certificate directory the worker finds is swapped.
port=$(fresh_port)
cp -r "$tmp/certs" "$tmp/live"
"$bin/dl-plan" "$root/configs/fashion-mlp.yaml" --base-port "$port" --set cluster.tls_dir="$tmp/live" \
  --set cluster.nworkers_per_group=1 --set train.steps=5 --set cluster.timeout_ms=30000 -o "$tmp/plan.json"
"$bin/dl-server" --plan "$tmp/plan.json" >"$tmp/server.jsonl" 2>"$tmp/server.log" &
server=$!
wait_serving "$tmp/server.log"
"$bin/dl-top" "$tmp/plan.json" --once --json --interval 0.1 | jq -e '.reachable == 1' >/dev/null ||
  fail "dl-top did not read the TLS server's stats with the job's tool-0 certificate"
ok "dl-top reads a TLS server's stats with the job's tool certificate"

cp "$tmp/other/worker-0.pem" "$tmp/other/worker-0.key" "$tmp/live/"
expect_failure 3 "server 'tls\+tcp://127.0.0.1:$port' did not take 'join'" \
  "$bin/dl-worker" --plan "$tmp/plan.json" --shards "$(shards_for 1)" --no-eval --timeout-ms 1500
ok "a worker with a certificate from another CA is refused"

"$bin/dl-plan" "$root/configs/fashion-mlp.yaml" --endpoints "tcp://127.0.0.1:$port" \
  --set cluster.nworkers_per_group=1 --set train.steps=5 --set cluster.timeout_ms=30000 -o "$tmp/plain.json"
expect_failure 3 "server 'tcp://127.0.0.1:$port' did not take 'join'" \
  "$bin/dl-worker" --plan "$tmp/plain.json" --shards "$(shards_for 1)" --no-eval --timeout-ms 1500
ok "a plain tcp:// client is refused by the TLS server"

# The right CA and key, but the server presents the wrong name: refused.
cp "$tmp/certs/worker-0.pem" "$tmp/certs/worker-0.key" "$tmp/live/"
cp "$tmp/certs/worker-1.pem" "$tmp/live/server-0.pem"; cp "$tmp/certs/worker-1.key" "$tmp/live/server-0.key"
port2=$(fresh_port)
"$bin/dl-plan" "$root/configs/fashion-mlp.yaml" --base-port "$port2" --set cluster.tls_dir="$tmp/live" \
  --set cluster.nworkers_per_group=1 --set train.steps=5 --set cluster.timeout_ms=30000 -o "$tmp/impostor.json"
"$bin/dl-server" --plan "$tmp/impostor.json" >/dev/null 2>&1 &
expect_failure 3 "server 'tls\+tcp://127.0.0.1:$port2' did not take 'join'" \
  "$bin/dl-worker" --plan "$tmp/impostor.json" --shards "$(shards_for 1)" --no-eval --timeout-ms 1500
ok "a server whose certificate names another process is refused"

# The genuine pair still works against the first server.
cp "$tmp/certs/server-0.pem" "$tmp/certs/server-0.key" "$tmp/live/"
"$bin/dl-worker" --plan "$tmp/plan.json" --shards "$(shards_for 1)" --no-eval >/dev/null ||
  fail "the genuine worker was refused"
wait "$server" || fail "the TLS server failed: $(cat "$tmp/server.log")"
ok "the genuine worker trains against the same server"
