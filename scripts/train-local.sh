#!/usr/bin/env bash
# Runs a job on this machine: shards the data when missing, plans, starts the
# plan's servers and workers on loopback, supervises them (see below), and
# prints the outcome.
#
#   scripts/train-local.sh JOB.yaml [section.field=value ...]
#   scripts/train-local.sh --resume RUN_DIR     go on with a stopped run: its
#                                               plan, from its newest checkpoints
#
# Environment: RUN_DIR (default runs/<job>-<time>), BASE_PORT (first server
# port; default picked from the process id), SHOAL_BIN (default build/),
# RETRIES (restarts allowed, default 3); for dl-plan: STRATEGY (data, the
# default; model; optimal), GROUP_SIZE (workers per group), PROFILE (cluster
# profile YAML); EVALUATE=no: worker 0 does not evaluate at the end; CLUSTER: the name of emulated hosts from
# scripts/netns-cluster.sh up — workers run on its hosts in turn, servers on
# its head (needs root).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${SHOAL_BIN:-$root/build}
usage() { echo "usage: $0 JOB.yaml [section.field=value ...] | --resume RUN_DIR" >&2; exit 2; }
resume_run=""
if [[ "${1:-}" == --resume ]]; then
  [[ $# -eq 2 && -f "$2/plan.json" ]] || usage
  run_dir=$2
  plan=$run_dir/plan.json
  resume_run=yes
else
  [[ $# -ge 1 && -f "$1" ]] || usage
  job=$1
  shift
  sets=()
  for o in "$@"; do sets+=(--set "$o"); done
  run_dir=${RUN_DIR:-runs/$(basename "$job" .yaml)-$(date +%Y%m%d-%H%M%S)}
  base_port=${BASE_PORT:-$((20000 + $$ % 20000))}
  mkdir -p "$run_dir"
  plan=$run_dir/plan.json
  options=(--strategy "${STRATEGY:-data}" --base-port "$base_port")
  [[ -z "${GROUP_SIZE:-}" ]] || options+=(--group-size "$GROUP_SIZE")
  [[ -z "${PROFILE:-}" ]] || options+=(--cluster "$PROFILE")
  if [[ -n "${CLUSTER:-}" ]]; then
    # Servers on the head, worker w on host w mod N: every endpoint on its host's address.
    mapfile -t cluster_hosts < <("$root/scripts/netns-cluster.sh" hosts "$CLUSTER")
    head=${cluster_hosts[-1]#head }  # `hosts` lists the head last
    unset 'cluster_hosts[-1]'
    read -r n_workers n_servers separate < <("$bin/dl-plan" "$job" "${sets[@]}" --strategy data |
      python3 -c 'import json,sys; c = json.load(sys.stdin)["cluster"]; print(c["workers"], c["servers"], c["server_worker_separate"])')
    endpoints="" worker_endpoints=""
    for ((w = 0; w < n_workers; w++)); do
      host=${cluster_hosts[w % ${#cluster_hosts[@]}]}
      worker_endpoints+="${worker_endpoints:+,}tcp://${host#* }:$((base_port + n_servers + w))"
    done
    # Separate servers on the head; servers bound to workers (AllReduce) with theirs.
    for ((i = 0; i < n_servers; i++)); do
      host=$head
      [[ "$separate" == True ]] || { host=${cluster_hosts[i % ${#cluster_hosts[@]}]}; host=${host#* }; }
      endpoints+="${endpoints:+,}tcp://$host:$((base_port + i))"
    done
    options+=(--endpoints "$endpoints" --worker-endpoints "$worker_endpoints")
  fi
  "$bin/dl-plan" "$job" "${sets[@]}" "${options[@]}" -o "$plan"
fi
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))$1)" "$plan"; }
workers=$(field '["cluster"]["workers"]')
servers=$(field '["cluster"]["servers"]')
dataset=$(field '["data"]["dataset"]')
shards=$(field '["data"]["shards"]')
[[ -n "$shards" ]] || shards=runs/shards/$dataset-$workers

if [[ ! -f "$shards/manifest.json" ]]; then
  echo "train-local: sharding $dataset into $shards ($workers shards)" >&2
  "$bin/dl-shard" --dataset "$dataset" --out "$shards" --shards "$workers" >"$run_dir/shard.json"
fi

# Supervision: a process killed by a signal, or a worker that gave up on a
# server (exit 3), is restarted, at most RETRIES times in all. A worker
# rejoins at the servers' step; a server takes every server and worker down
# with it, and they all restart from the newest checkpoint every server has
# (dl-ckpt prepare-resume), so the servers agree on one version. Any other
# failure (bad input: exit 1 or 2) stops the run.
retries=${RETRIES:-3}
declare -A name_of=()  # pid -> "server I" / "worker W"
log() { echo "train-local: $*" >&2; }

start_server() {  # start_server I [RESUME_DIR]
  local resume=()
  [[ -z "${2:-}" ]] || resume=(--resume "$2")
  on_host servers "$1" "$bin/dl-server" --plan "$plan" --id "$1" --checkpoint-dir "$run_dir/ckpt" "${resume[@]}" \
    >>"$run_dir/server-$1.jsonl" 2>>"$run_dir/server-$1.log" &
  name_of[$!]="server $1"
}
# Where a process runs: on the host its plan endpoint names (emulated hosts), or here.
on_host() {  # on_host workers|servers I CMD...
  local role=$1 i=$2 address
  shift 2
  address=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]][int(sys.argv[3])].get('endpoint', ''))" "$plan" "$role" "$i")
  address=${address#*://}
  address=${address%:*}
  local host=""
  [[ -z "${CLUSTER:-}" || -z "$address" ]] ||
    host=$("$root/scripts/netns-cluster.sh" hosts "$CLUSTER" | awk -v a="$address" '$2 == a && $1 != "head" {print $1}')
  [[ -z "$host" ]] || exec ip netns exec "$host" "$@"
  exec "$@"
}
start_worker() {  # start_worker W
  if (($1 == 0)); then
    # Worker 0 reports to us: a live line on a terminal, JSON lines otherwise.
    local evaluate=()
    [[ "${EVALUATE:-yes}" == yes ]] || evaluate=(--no-eval)
    on_host workers 0 "$bin/dl-worker" --plan "$plan" --id 0 --shards "$shards" --metrics "$run_dir/worker-0.jsonl" \
      "${evaluate[@]}" 2>>"$run_dir/worker-0.log" &
  else
    on_host workers "$1" "$bin/dl-worker" --plan "$plan" --id "$1" --shards "$shards" --no-eval \
      >>"$run_dir/worker-$1.jsonl" 2>>"$run_dir/worker-$1.log" &
  fi
  name_of[$!]="worker $1"
}
start_all() {  # start_all [RESUME_DIR]
  for ((i = 0; i < servers; i++)); do start_server "$i" "${1:-}"; done
  for ((w = 0; w < workers; w++)); do start_worker "$w"; done
}
stop_all() {
  local pid
  for pid in "${!name_of[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${!name_of[@]}"; do wait "$pid" 2>/dev/null || true; done
  name_of=()
}
trap 'stop_all' EXIT
trap 'stop_all; exit 130' INT TERM

# prepare_resume N: the newest step every server has a good checkpoint of,
# copied into a directory of its own; prints that directory (empty if none).
prepare_resume() {
  local dir=$run_dir/resume-$1
  compgen -G "$run_dir/ckpt/*.ckpt" >/dev/null || return 0
  local ok=yes
  "$bin/dl-ckpt" prepare-resume "$run_dir/ckpt" -o "$dir" >"$dir.json" 2>"$dir.log" || ok=""
  sed 's/^/train-local: /' "$dir.log" >&2  # e.g. a corrupt newest checkpoint passed over, and why
  if [[ -n "$ok" ]]; then
    log "resuming at step $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step"])' "$dir.json")"
    echo "$dir"
  else
    log "no checkpoint to resume from; starting over"
  fi
}

if [[ -n "$resume_run" ]]; then
  start_all "$(prepare_resume 0)"
else
  start_all
fi
log "$workers workers, $servers servers, plan $plan, logs in $run_dir"

failed=""
attempt=0
while ((${#name_of[@]} > 0)); do
  status=0
  wait -n -p done_pid || status=$?
  name=${name_of[$done_pid]:-}
  [[ -n "$name" ]] || continue
  unset "name_of[$done_pid]"
  ((status == 0)) && continue
  if ((status >= 128 || status == 3)) && ((attempt < retries)); then
    attempt=$((attempt + 1))
    # A worker that gave up on a server that has died is that server's failure:
    # restarting the worker alone would only spend a retry.
    if [[ "$name" == worker* ]]; then
      for pid in "${!name_of[@]}"; do
        [[ "${name_of[$pid]}" == server* ]] && ! kill -0 "$pid" 2>/dev/null && name=${name_of[$pid]}
      done
    fi
    if [[ "$name" == server* ]]; then
      log "$name died (exit $status); restarting every server from the newest checkpoint they all have, and the workers (retry $attempt of $retries)"
      stop_all
      start_all "$(prepare_resume "$attempt")"
    else
      log "$name died (exit $status); restarting it: it rejoins at the servers' step (retry $attempt of $retries)"
      start_worker "${name#worker }"
    fi
    continue
  fi
  failed=$name
  log "$name failed (exit $status); stopping the others"
  logfile=$run_dir/${name/ /-}.log
  [[ -f "$logfile" ]] && tail -n 5 "$logfile" >&2
  stop_all
done
trap - EXIT
[[ -z "$failed" ]] || exit 1

"$bin/dl-ckpt" verify "$run_dir/ckpt" >"$run_dir/verify.json"
accuracy=$(python3 -c "
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line) if line.startswith('{') else {}
    if r.get('event') == 'done': print(r.get('test_accuracy', ''))" "$run_dir/worker-0.jsonl")
log "done: ${accuracy:+test accuracy $accuracy; }checkpoints in $run_dir/ckpt (verified)"
