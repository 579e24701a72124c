#!/usr/bin/env bash
# A real Slurm (slurmctld, two slurmd, munge) on this machine runs the MLP job
# through sbatch with 1 server and 2 workers; the job's output reports the test
# accuracy; a job with a failing worker fails; and no daemon or job process is
# left afterwards. Needs root and Debian's slurm-wlm and munge.
. "$(dirname "$0")/lib.sh"
require_root

cluster=$tmp/slurm
stop_cluster() { "$root/scripts/slurm/local-cluster.sh" stop "$cluster" || true; cleanup; }
trap stop_cluster EXIT
"$root/scripts/slurm/local-cluster.sh" start "$cluster" 2 >"$tmp/env" || fail "Slurm did not come up"
export SLURM_CONF=$cluster/slurm.conf
[[ $(sinfo -hN -t idle | wc -l) -eq 2 ]] || fail "expected 2 idle nodes: $(sinfo -N)"
ok "slurmctld and two slurmd are up on loopback"

# submit NAME [override...]: runs train.sbatch to the end; prints the job id.
submit() {
  local name=$1 id
  shift
  id=$(sbatch --parsable --output="$tmp/$name.out" \
    "--export=ALL,SHOAL_ROOT=$root,SHOAL_BIN=$bin,RUN_DIR=$tmp/$name,BASE_PORT=$(fresh_port)" \
    "$root/scripts/slurm/train.sbatch" "$root/configs/fashion-mlp.yaml" "$@")
  for _ in $(seq 300); do
    [[ -z "$(squeue -h -j "$id" 2>/dev/null)" ]] && break
    sleep 1
  done
  [[ -z "$(squeue -h -j "$id" 2>/dev/null)" ]] || fail "job $name ($id) did not finish in 300 s"
  echo "$id"
}
exit_code() { scontrol show job "$1" | sed -n 's/.*ExitCode=\([0-9]*\):.*/\1/p'; }

# The demo's run: 2 epochs, the rate lowered for the last quarter.
id=$(submit good train.epochs=2 train.lr_schedule.kind=step train.lr_schedule.every=1400 \
  data.shards="$(shards_for 2)")
[[ "$(exit_code "$id")" == 0 ]] || fail "the job failed: $(cat "$tmp/good.out")"
accuracy=$(sed -n 's/^shoal: done: test accuracy \([0-9.]*\);.*/\1/p' "$tmp/good.out")
[[ -n "$accuracy" ]] || fail "no accuracy in the job's output: $(cat "$tmp/good.out")"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.85 else 1)" "$accuracy" ||
  fail "test accuracy $accuracy < 0.85"
ok "sbatch trains the MLP with 1 server and 2 workers to test accuracy $accuracy (>= 0.85)"
for f in server-0.jsonl server-0.log worker-0.jsonl worker-0.log worker-1.jsonl worker-1.log verify.json; do
  [[ -s "$tmp/good/$f" || "$f" == *.log ]] || fail "missing per-rank output $f"
done
grep -q '"endpoint": "tcp://127.0.0.1:' "$tmp/good/plan.json" || fail "endpoints not from the nodes' addresses"
ok "one log per rank; endpoints from the allocation's nodes"
python3 - "$tmp/good/run.json" <<'PY' || fail "run.json of the good job: $(cat "$tmp/good/run.json")"
import json, sys
run = json.load(open(sys.argv[1]))
assert run["format"] == "shoal-run" and run["status"] == "done", run["status"]
assert run["command"][-1].startswith("data.shards="), run["command"]
steps = {p["name"]: p["runs"] for p in run["processes"]}
assert sorted(steps) == ["servers", "workers"], steps
assert all(r[0]["exit_status"] == 0 for r in steps.values()), steps
PY
ok "run.json: the command, status done, both steps exited 0"

# AllReduce: a server with each worker, in the worker's process: one step.
id=$(submit allreduce train.steps=100 cluster.nservers_per_group=2 cluster.server_worker_separate=false \
  data.shards="$(shards_for 2)")
[[ "$(exit_code "$id")" == 0 ]] || fail "the AllReduce job failed: $(cat "$tmp/allreduce.out")"
for w in 0 1; do
  grep -q "worker $w hosts server $w" "$tmp/allreduce/worker-$w.log" || fail "worker $w hosts no server: $(cat "$tmp/allreduce/worker-$w.log")"
  [[ -f "$tmp/allreduce/ckpt/server-$w-step-0000000100.ckpt" ]] || fail "no final checkpoint of server $w: $(ls "$tmp/allreduce/ckpt")"
done
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert [p['name'] for p in r['processes']] == ['workers'], r" \
  "$tmp/allreduce/run.json" || fail "run.json of the AllReduce job: $(cat "$tmp/allreduce/run.json")"
ok "sbatch runs AllReduce as one step: each worker hosts its server, and both checkpoint"

# An experiment's Makefile submits its runs with LAUNCH=slurm (sbatch --wait).
make -C "$root/experiments/sweep" LAUNCH=slurm OUT="$tmp/exp" BIN="$bin" RATES=0.05 WORKERS=2 CONSISTENCY=bsp \
  COMMON="train.steps=40 train.display_every=20" report >"$tmp/exp.log" 2>&1 || fail "make LAUNCH=slurm: $(tail -n 20 "$tmp/exp.log")"
grep -q "sbatch --wait" "$tmp/exp.log" || fail "the experiment did not go through sbatch"
grep -qE "^bsp-w2-lr0.05 +done +40 " "$tmp/exp/report/report.txt" || fail "no row for the Slurm run: $(cat "$tmp/exp/report/report.txt")"
ok "make LAUNCH=slurm runs an experiment through sbatch --wait and reports it"

# A worker that fails (a corrupted shard: a pixel of every record flipped)
# fails the job, and stops the server.
cp -r "$(shards_for 2)" "$tmp/shards"
python3 - "$tmp/shards/train-00001.shard" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
for at in range(44 + 300, len(b), 792):  # 44-byte header; records of 784 pixels + label + CRC
    b[at] ^= 0xFF
open(sys.argv[1], "wb").write(b)
PY
rehash_manifest "$tmp/shards" train-00001.shard
id=$(submit bad train.steps=50 data.shards="$tmp/shards")
code=$(exit_code "$id")
[[ "$code" != 0 ]] || fail "a job with a failing worker exited 0"
grep -qE "record [0-9]+: checksum mismatch" "$tmp/bad/worker-1.log" || fail "worker 1's log lacks the reason"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(r['status'] != 'failed')" "$tmp/bad/run.json" ||
  fail "the failed job's run.json does not say failed"
ok "a failing worker fails the job (exit $code) with its reason in its log and in run.json"

"$root/scripts/slurm/local-cluster.sh" stop "$cluster"
for _ in $(seq 100); do pgrep -f "$cluster" >/dev/null || break; sleep 0.1; done
! pgrep -f "$cluster" >/dev/null || fail "daemons left 10 s after stop: $(pgrep -af "$cluster")"
! pgrep -f "$tmp/(good|bad)/plan.json" >/dev/null || fail "job processes left"
ok "no daemon or job process is left"
