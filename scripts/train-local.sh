#!/usr/bin/env bash
# Runs a job on this machine: shards the data when missing, plans, starts the
# plan's servers and workers, supervises them, and prints the outcome.
# `train-local.sh --help` lists the options. The run owns its processes:
# each is started with --parent (it stops within a second when this script
# dies, by any signal) and an incarnation of its own, the run directory is
# locked while it runs, and its ports are held for it alone.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() {
  cat <<EOF
usage: $0 [OPTIONS] JOB.yaml [section.field=value ...]
       $0 [OPTIONS] --plan PLAN.json
       $0 [OPTIONS] --resume RUN_DIR

Trains JOB.yaml (with fields overridden) on this machine: one dl-server per
server and one dl-worker per worker of its plan, on loopback (or on emulated
hosts); servers bound to their workers (server_worker_separate: false) run in
their workers' processes. A process killed by a signal is restarted (a worker
rejoins at the servers' step; a server, or a worker hosting one, brings every
process back from the newest checkpoint all servers have); bad input (exit 1)
stops the run. Everything a run makes is in its run directory, with run.json
saying what ran and how it ended.

Options (each also read from the environment variable named):
  --plan PLAN.json      run this plan of dl-plan's instead of a job, on this run's ports (or hosts)
  --resume RUN_DIR      go on with a stopped run: its plan, from its newest checkpoints
  --start-over          START_OVER=yes: --resume may train from step 0 where no checkpoint is
                        good (refused otherwise)
  --run-dir DIR         RUN_DIR: where the run's files go (default runs/<job>-<time>-<pid>); one
                        that holds another run is refused (exit 2): --resume it instead
  --base-port N         BASE_PORT: the first server port (default: free ports below 32000)
  --retries N           RETRIES: restarts allowed in all (default 3)
  --stop-grace S        STOP_GRACE: seconds the run's processes have to end after SIGTERM before
                        SIGKILL, whenever they are stopped: at the end, on a failure, before
                        restarting them all (default 10)
  --strategy S          STRATEGY: dl-plan's --strategy: data (default), model, optimal
  --group-size M        GROUP_SIZE: workers per group for dl-plan
  --profile FILE        PROFILE: cluster profile (YAML) for dl-plan
  --cluster NAME        CLUSTER: emulated hosts of scripts/netns-cluster.sh (root): workers on
                        its hosts in turn, servers on its head
  --threads N           THREADS: compute threads of each worker (default: this machine's cores
                        shared among the workers, at least 1)
  --no-eval             EVALUATE=no: worker 0 does not evaluate on the test set
  -h, --help            this text
Environment: SHOAL_BIN, where the dl-* tools are (default build/).
The shards are dealt by data.shard_seed (a job field) into runs/shards/.
Exit: 0 done, 1 the run failed (the failure is named), 2 usage, 130 interrupted.
EOF
}
log() { echo "train-local: $*" >&2; }
die_usage() {
  log "$*"
  echo "usage: $0 [OPTIONS] JOB.yaml [section.field=value ...] | --plan PLAN.json | --resume RUN_DIR (--help: more)" >&2
  exit 2
}

command_line=("$@")  # for run.json
bin=${SHOAL_BIN:-$root/build}
run_dir=${RUN_DIR:-}
base_port=${BASE_PORT:-}
retries=${RETRIES:-3}
stop_grace=${STOP_GRACE:-10}
strategy=${STRATEGY:-data}
group_size=${GROUP_SIZE:-}
profile=${PROFILE:-}
cluster=${CLUSTER:-}
threads=${THREADS:-}
evaluate=${EVALUATE:-yes}
start_over=${START_OVER:-no}
resume_run=""
given_plan=""
args=()
while (($# > 0)); do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --no-eval) evaluate=no; shift ;;
    --start-over) start_over=yes; shift ;;
    --resume | --plan | --run-dir | --base-port | --retries | --stop-grace | --strategy | --group-size | --profile | --cluster | \
      --threads)
      (($# >= 2)) || die_usage "$1 needs a value"
      case $1 in
        --resume) resume_run=$2 ;;
        --plan) given_plan=$2 ;;
        --run-dir) run_dir=$2 ;;
        --base-port) base_port=$2 ;;
        --retries) retries=$2 ;;
        --stop-grace) stop_grace=$2 ;;
        --strategy) strategy=$2 ;;
        --group-size) group_size=$2 ;;
        --profile) profile=$2 ;;
        --cluster) cluster=$2 ;;
        --threads) threads=$2 ;;
      esac
      shift 2 ;;
    --) shift; args+=("$@"); break ;;
    -*) die_usage "unknown option '$1'" ;;
    *) args+=("$1"); shift ;;
  esac
done
# (No leading zeros: bash's arithmetic would read 08 as octal, and fail.)
[[ "$retries" =~ ^(0|[1-9][0-9]*)$ ]] || die_usage "--retries must be a number, not '$retries'"
[[ "$stop_grace" =~ ^(0|[1-9][0-9]*)$ ]] || die_usage "--stop-grace must be a number of seconds, not '$stop_grace'"
[[ -z "$base_port" || "$base_port" =~ ^[0-9]+$ ]] || die_usage "--base-port must be a number, not '$base_port'"
[[ -z "$threads" || "$threads" =~ ^[1-9][0-9]*$ ]] || die_usage "--threads must be a positive number, not '$threads'"
for tool in dl-shard dl-plan dl-server dl-worker dl-ckpt; do
  [[ -x "$bin/$tool" ]] || { log "no '$bin/$tool': build first (make), or set SHOAL_BIN"; exit 1; }
done

if [[ -n "$resume_run" ]]; then
  ((${#args[@]} == 0)) || die_usage "--resume takes a run directory and nothing else"
  [[ -d "$resume_run" ]] || die_usage "no run directory '$resume_run'"
  [[ -f "$resume_run/plan.json" ]] || die_usage "'$resume_run' has no plan.json: not a run directory"
  run_dir=$resume_run
elif [[ -n "$given_plan" ]]; then
  ((${#args[@]} == 0)) || die_usage "--plan takes a plan and no job or overrides (they are in the plan)"
  [[ -f "$given_plan" ]] || die_usage "no plan file '$given_plan'"
  run_dir=${run_dir:-runs/$(basename "$given_plan" .json)-$(date +%Y%m%d-%H%M%S)-$$}
else
  ((${#args[@]} >= 1)) || die_usage "no job file given"
  job=${args[0]}
  [[ -f "$job" ]] || die_usage "no job file '$job'"
  sets=()
  for o in "${args[@]:1}"; do sets+=(--set "$o"); done
  run_dir=${run_dir:-runs/$(basename "$job" .yaml)-$(date +%Y%m%d-%H%M%S)-$$}
fi
mkdir -p "$run_dir"

# One supervisor per run directory: the lock dies with its holder.
exec {lock}>"$run_dir/.lock"
if ! flock -n "$lock"; then
  log "run directory '$run_dir' is in use by train-local PID $(cat "$run_dir/supervisor.pid" 2>/dev/null || echo '?')"
  exit 1
fi
# A run directory is one run's: a new run does not take another's (its plan,
# checkpoints and record would mix with this one's, and a crash could resume
# from the other plan's checkpoints).
if [[ -z "$resume_run" ]] && { [[ -e "$run_dir/plan.json" || -e "$run_dir/run.json" ]] ||
  compgen -G "$run_dir/ckpt/*.ckpt" >/dev/null; }; then
  log "run directory '$run_dir' holds another run (plan $(jq -r '.hash // "?"' "$run_dir/plan.json" 2>/dev/null ||
    echo '?')): go on with it with --resume '$run_dir', or give a fresh --run-dir"
  exit 2
fi
echo $$ >"$run_dir/supervisor.pid"
plan=$run_dir/plan.json
run_id=$(basename "$run_dir")-$$
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
events=$run_dir/processes.jsonl  # one line per start and exit: what run.json sums up
: >>"$events"

# The fields of a plan this script needs, as shell variables, from dl-plan check.
read_plan() {  # read_plan FILE
  local summary
  summary=$("$bin/dl-plan" check "$1") || exit 1
  { read -r workers; read -r servers; read -r separate; read -r exchange; read -r dataset; read -r shards
    read -r shard_seed; read -r plan_hash; } < <(jq -r '.workers, .servers,
      (if .server_worker_separate then "yes" else "no" end), (if .workers_exchange then "yes" else "no" end),
      .data.dataset, .data.shards, .data.shard_seed, .hash' <<<"$summary")
  mapfile -t server_endpoints < <(jq -r '.server_endpoints[]' <<<"$summary")
  mapfile -t worker_endpoints < <(jq -r '.worker_endpoints[]' <<<"$summary")
}

if [[ -n "$resume_run" ]]; then
  read_plan "$plan"
  if grep -q '"status": *"done"' "$run_dir/run.json" 2>/dev/null; then
    log "'$run_dir' has finished already (run.json): nothing to resume"
    exit 1
  fi
else
  if [[ -n "$given_plan" ]]; then
    # Checked whole (hash, job, net) before anything starts; it is run as it
    # is but for its endpoints, which are this run's (dl-plan relocate).
    read_plan "$given_plan"
    planning=(relocate "$given_plan")
  else
    "$bin/dl-plan" "$job" "${sets[@]}" --strategy data -o "$run_dir/job-plan.json"  # checks the job, counts the processes
    read_plan "$run_dir/job-plan.json"
    rm -f "$run_dir/job-plan.json"
    planning=("$job" "${sets[@]}" --strategy "$strategy")
    [[ -z "$group_size" ]] || planning+=(--group-size "$group_size")
    [[ -z "$profile" ]] || planning+=(--cluster "$profile")
  fi
  if [[ -n "$cluster" ]]; then
    # Servers on the head, worker w on host w mod N: every endpoint on its host's address.
    mapfile -t cluster_hosts < <("$root/scripts/netns-cluster.sh" hosts "$cluster")
    head=${cluster_hosts[-1]#head }  # `hosts` lists the head last
    unset 'cluster_hosts[-1]'
    base_port=${base_port:-$(python3 "$root/scripts/free-ports.py" $((servers + workers)) $$ "$head")}
    endpoints="" wendpoints=""
    for ((w = 0; w < workers; w++)); do
      host=${cluster_hosts[w % ${#cluster_hosts[@]}]}
      wendpoints+="${wendpoints:+,}tcp://${host#* }:$((base_port + servers + w))"
    done
    # Separate servers on the head; servers bound to workers (AllReduce) with theirs.
    for ((i = 0; i < servers; i++)); do
      host=$head
      [[ "$separate" == yes ]] || { host=${cluster_hosts[i % ${#cluster_hosts[@]}]}; host=${host#* }; }
      endpoints+="${endpoints:+,}tcp://$host:$((base_port + i))"
    done
    planning+=(--endpoints "$endpoints" --worker-endpoints "$wendpoints")
  else
    base_port=${base_port:-$(python3 "$root/scripts/free-ports.py" $((servers + workers)) $$)}
    planning+=(--base-port "$base_port")
  fi
  "$bin/dl-plan" "${planning[@]}" -o "$plan"
  read_plan "$plan"
fi
# The workers share this machine's cores (emulated hosts are on it too).
threads=${threads:-$(($(nproc) / workers > 1 ? $(nproc) / workers : 1))}
# A job that names its shards brings them (images: dl-shard --images, --cifar, ...).
if [[ -n "$shards" ]]; then
  [[ -f "$shards/manifest.json" ]] || {
    log "no shards at '$shards' (data.shards): make them with dl-shard (--images, --cifar, --npy, --dataset)"
    exit 1
  }
else
  shards=runs/shards/$dataset-$workers-$shard_seed
fi
if [[ ! -f "$shards/manifest.json" ]]; then
  log "sharding $dataset into $shards ($workers shards, seed $shard_seed)"
  "$bin/dl-shard" --dataset "$dataset" --out "$shards" --shards "$workers" --seed "$shard_seed" >"$run_dir/shard.json"
fi

# Supervision: a process killed by a signal, or a worker that gave up on a
# server (exit 3), is restarted, at most $retries times in all. A worker
# rejoins at the servers' step; a server (or a worker hosting one) takes
# every server and worker down with it, and they all restart from the newest
# checkpoint every server has (dl-ckpt prepare-resume), so the servers agree
# on one version. Any other failure (bad input: exit 1 or 2) stops the run.
declare -A name_of=()  # pid -> "server I" / "worker W"
declare -A starts=()   # name -> how many times it was started
now() { date -u +%Y-%m-%dT%H:%M:%S.%3NZ; }
record() { printf '%s\n' "$1" >>"$events"; }

# Where a process runs: on the host its plan endpoint names (emulated hosts), or here.
on_host() {  # on_host ENDPOINT CMD...
  local address=${1#*://} host=""
  shift
  exec {lock}>&-  # the run directory's lock is the supervisor's alone
  address=${address%:*}
  [[ -z "$cluster" || -z "$address" ]] ||
    host=$("$root/scripts/netns-cluster.sh" hosts "$cluster" | awk -v a="$address" '$2 == a && $1 != "head" {print $1}')
  [[ -z "$host" ]] || exec ip netns exec "$host" "$@"
  exec "$@"
}
# A process's stderr: appended to its log, its checkpoint failures also shown here as they come.
follow_log() {  # follow_log FILE, in a process substitution
  exec {lock}>&-
  tee -a "$1" | grep --line-buffered -E 'checkpoint of step [0-9]+ failed|gave up checkpointing|checkpoint, which|the disk does not answer' >&2
}
# A signal that comes while a process starts waits until it is recorded (in
# name_of), so that stopping the run stops that process too.
launching=""
deferred=""
launched() {  # launched NAME: after starting $!
  local name=$1 pid=$!
  name_of[$pid]=$name
  starts[$name]=$((${starts[$name]:-0} + 1))
  record "{\"event\": \"start\", \"name\": \"$name\", \"pid\": $pid, \"time\": \"$(now)\"}"
  launching=""
  [[ -z "$deferred" ]] || interrupted
}
# Every process dies with this script (--parent) and names its incarnation.
identity() { echo --parent $$ --incarnation "$run_id/${1/ /-}/$((${starts[$1]:-0} + 1))"; }
start_server() {  # start_server I [RESUME_DIR]
  launching=yes
  local resume=()
  [[ -z "${2:-}" ]] || resume=(--resume "$2")
  # shellcheck disable=SC2046
  on_host "${server_endpoints[$1]}" "$bin/dl-server" --plan "$plan" --id "$1" --checkpoint-dir "$run_dir/ckpt" \
    "${resume[@]}" $(identity "server $1") >>"$run_dir/server-$1.jsonl" 2> >(follow_log "$run_dir/server-$1.log") &
  launched "server $1"
}
start_worker() {  # start_worker W [RESUME_DIR]
  launching=yes
  local out=("--no-eval") files=() serves=()
  # A server bound to its worker (AllReduce) lives in the worker's process.
  if [[ "$separate" == no ]]; then
    serves=(--checkpoint-dir "$run_dir/ckpt")
    [[ -z "${2:-}" ]] || serves+=(--resume "$2")
  fi
  # Worker 0 reports to us: a live line on a terminal, JSON lines otherwise.
  if (($1 == 0)); then
    out=()
    [[ "$evaluate" == yes ]] || out=(--no-eval)
    files=(--metrics "$run_dir/worker-0.jsonl")
  fi
  # shellcheck disable=SC2046
  if (($1 == 0)); then
    on_host "${worker_endpoints[0]}" "$bin/dl-worker" --plan "$plan" --id 0 --shards "$shards" --threads "$threads" \
      "${files[@]}" \
      --state-dir "$run_dir/state" "${serves[@]}" \
      "${out[@]}" $(identity "worker 0") 2> >(follow_log "$run_dir/worker-0.log") &
  else
    on_host "${worker_endpoints[$1]}" "$bin/dl-worker" --plan "$plan" --id "$1" --shards "$shards" --threads "$threads" \
      "${out[@]}" \
      --state-dir "$run_dir/state" "${serves[@]}" \
      $(identity "worker $1") >>"$run_dir/worker-$1.jsonl" 2> >(follow_log "$run_dir/worker-$1.log") &
  fi
  launched "worker $1"
}
start_all() {  # start_all [RESUME_DIR]
  [[ "$separate" == no ]] || for ((i = 0; i < servers; i++)); do start_server "$i" "${1:-}"; done
  for ((w = 0; w < workers; w++)); do start_worker "$w" "${1:-}"; done
}
reaped() {  # reaped PID STATUS
  record "{\"event\": \"exit\", \"name\": \"${name_of[$1]}\", \"pid\": $1, \"status\": $2, \"time\": \"$(now)\"}"
  unset "name_of[$1]"
}
# exit_state PID: sets exit_is to "exiting" while PID's main thread has
# exited (a zombie) and another thread of it has not; to "stuck" once that
# has lasted 3 s, a thread stuck in the kernel on a disk that does not
# answer (until it ends, wait would block and kill does nothing); to ""
# otherwise. Sets stuck_status to PID's exit status, which /proc has.
declare -A exited_at=()
exit_state() {
  local stat task state="" fields code
  exit_is=""
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 0
  stat=${stat##*) }  # "STATE PPID ..."
  [[ ${stat%% *} == Z ]] || return 0
  for task in /proc/"$1"/task/*/stat; do
    { read -r state <"$task"; } 2>/dev/null || continue
    state=${state##*) }
    [[ ${state%% *} == [ZX] ]] || break
    state=""
  done
  [[ -n $state ]] || return 0
  read -r -a fields <<<"$stat"
  code=${fields[49]:-0}  # field 52, exit_code: the status as waitpid reports it
  ((code & 127)) && stuck_status=$((128 + (code & 127))) || stuck_status=$((code >> 8))
  exited_at[$1]=${exited_at[$1]:-$SECONDS}
  exit_is=exiting
  ((SECONDS - exited_at[$1] < 3)) || exit_is=stuck
}
# say_stuck PID: says that PID, which exit_state (or a SIGKILL that did not
# end it) finds stuck, is not waited for.
say_stuck() {
  log "${name_of[$1]} (pid $1) is stuck in the kernel, a thread of it in state" \
    "$(awk '{print $3}' /proc/"$1"/task/*/stat 2>/dev/null | sort -u | tr -d '\n') (a disk that does not answer?):" \
    "it ends when that does; not waiting for it"
}

# A builtin sleep: read's timeout on a pipe that never has data, no fork.
exec {nap_fd}<> <(:)
nap() { read -r -t "$1" -u "$nap_fd" || true; }

# Whether PID has not ended (a zombie has, though kill -0 still finds it).
alive() { [[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" =~ ^[^ZX]$ ]]; }
# SIGTERM to every process, and SIGKILL to those still there after
# $stop_grace seconds (a stopped process never acts on SIGTERM). One that
# SIGKILL has not ended 5 s later, or that has exited with a thread stuck in
# the kernel, is named and left: it ends when its disk answers.
stop_all() {
  local pid status deadline=$((SECONDS + stop_grace)) left killed=no
  for pid in "${!name_of[@]}"; do kill "$pid" 2>/dev/null || true; done
  while :; do
    left=()
    for pid in "${!name_of[@]}"; do
      exit_state "$pid"
      if [[ $exit_is == stuck ]]; then
        say_stuck "$pid"
        reaped "$pid" "$stuck_status"
      elif [[ $exit_is == exiting ]] || alive "$pid"; then
        left+=("$pid")
      fi
    done
    ((${#left[@]} > 0)) || break
    if ((SECONDS >= deadline)) && [[ $killed == yes ]]; then
      for pid in "${left[@]}"; do
        say_stuck "$pid"
        reaped "$pid" 137
      done
      break
    fi
    if ((SECONDS >= deadline)); then
      log "${#left[@]} process(es) still running ${stop_grace} s after SIGTERM; killing them"
      kill -KILL "${left[@]}" 2>/dev/null || true
      killed=yes
      deadline=$((SECONDS + 5))
    fi
    nap 0.1
  done
  for pid in "${!name_of[@]}"; do
    status=0
    wait "$pid" 2>/dev/null || status=$?
    reaped "$pid" "$status"
  done
}

restarts=0
finish() {  # finish STATUS EXIT_CODE: the logs' last lines, run.json, then exit
  # A log's follower (follow_log) writes its process's last lines a moment
  # after the process ends: up to 2 s for them, so the logs are whole on exit.
  local i
  for ((i = 0; i < 20; i++)); do
    pgrep -f "^tee -a $run_dir/" >/dev/null || break
    sleep 0.1
  done
  python3 "$root/scripts/run-record.py" "$run_dir" "$1" "$started" "$(now)" "$plan_hash" "$restarts" "${shards:-}" \
    "$0" "${command_line[@]}" || true
  exit "$2"
}
# shellcheck disable=SC2317  # run by the trap below
interrupted() {
  if [[ -n "$launching" ]]; then
    deferred=yes
    return
  fi
  stop_all
  log "interrupted; go on with: $0 --resume $run_dir"
  finish interrupted 130
}
trap 'stop_all' EXIT
trap 'interrupted' INT TERM HUP

# prepare_resume N: the newest step every server has a good checkpoint of,
# copied into a directory of its own; prints that directory (empty if none).
prepare_resume() {
  local dir=$run_dir/resume-$1
  compgen -G "$run_dir/ckpt/*.ckpt" >/dev/null || return 0
  local ok=yes
  "$bin/dl-ckpt" prepare-resume "$run_dir/ckpt" -o "$dir" >"$dir.json" 2>"$dir.log" || ok=""
  sed 's/^/train-local: /' "$dir.log" >&2  # e.g. a corrupt newest checkpoint passed over, and why
  [[ -n "$ok" ]] || return 0
  log "resuming at step $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step"])' "$dir.json")"
  echo "$dir"
}

if [[ -n "$resume_run" ]]; then
  from=$(prepare_resume "r$$")
  if [[ -z "$from" && "$start_over" != yes ]]; then
    log "--resume would start '$run_dir' over from step 0: none of its checkpoints is good" \
      "(train.checkpoint_every may be 0); --start-over to do so"
    finish refused 1
  fi
  [[ -n "$from" ]] || log "no checkpoint to resume from; starting over (--start-over)"
  start_all "$from"
else
  start_all
fi
log "$workers workers, $servers servers$([[ "$separate" == yes ]] || echo " (each in its worker's process)"), plan $plan, logs in $run_dir"

# Whether a child still runs: kill -0 also succeeds on one that died and is
# not reaped yet (a zombie), as a killed server is when its worker's exit is
# reaped first, and on an unrelated process that took a reaped child's pid.
# Only an end that is certain counts (next_exit waits for it by pid): a
# child whose /proc entry exists but cannot be read runs. A builtin read, not
# a fork: see next_exit.
running() {
  local stat
  if ! { read -r stat < "/proc/$1/stat"; } 2>/dev/null; then
    [[ -e "/proc/$1" ]]
    return
  fi
  stat=${stat##*) }  # "STATE PPID ..."
  local state=${stat%% *} rest=${stat#* }
  [[ $state != Z && ${rest%% *} == "$$" ]]
}

# next_exit: wait for a child to end; sets done_pid and status. It looks at
# each child by pid, ten times a second, rather than waiting in `wait -n`:
# a child that has exited with a thread stuck in the kernel sends no
# SIGCHLD, and `wait -n` would never return. Children already reaped (by a
# command run in the foreground meanwhile) are ended too: `wait PID` still
# has their status.
next_exit() {
  local pid
  status=0
  done_pid=""
  while :; do
    for pid in "${!name_of[@]}"; do
      exit_state "$pid"
      case $exit_is in
        stuck)
          done_pid=$pid
          status=$stuck_status
          say_stuck "$pid"
          return
          ;;
        exiting) continue ;;
      esac
      if ! running "$pid"; then
        done_pid=$pid
        wait "$pid" 2>/dev/null || status=$?
        return
      fi
    done
    nap 0.1
  done
}

# peer_named_by NAME [TRIES]: the process a worker that gave up names in its last
# log lines, or nothing: "worker W" when a server it waited on answered that
# one worker's update was missing (its last line: "not from worker W") or when a peer inside
# the step was silent ("from worker W at '…'"), else "server I" (by endpoint).
# Its last words may reach the log (through tee) a moment after it ended: up to
# TRIES tenths of a second.
peer_named_by() {
  local i last log=$run_dir/${1/ /-}.log
  for ((i = 0; i < ${2:-0}; i++)); do
    [[ "$(tail -n 1 "$log" 2>/dev/null)" != *" error: "* ]] || break
    sleep 0.1
  done
  last=$(tail -n 5 "$log" 2>/dev/null) || return 0
  if [[ "${last##*$'\n'}" =~ not\ from\ worker\ ([0-9]+)([^0-9,]|$) ]]; then
    echo "worker ${BASH_REMATCH[1]}"
    return 0
  fi
  for ((i = 0; i < ${#server_endpoints[@]}; i++)); do
    if [[ "$last" == *"server '${server_endpoints[$i]}'"* ]]; then
      echo "server $i"
      return 0
    fi
  done
  if [[ "$last" =~ from\ worker\ ([0-9]+)\ at\ \' ]]; then echo "worker ${BASH_REMATCH[1]}"; fi
}

# still_running NAME TRIES: whether NAME's process still runs after TRIES
# tenths of a second (one that was stopping has ended by then).
still_running() {
  local tries pid
  for ((tries = 0; tries < $2; tries++)); do
    for pid in "${!name_of[@]}"; do
      [[ "${name_of[$pid]}" != "$1" ]] || running "$pid" || return 1
    done
    sleep 0.1
  done
  for pid in "${!name_of[@]}"; do
    [[ "${name_of[$pid]}" != "$1" ]] || return 0
  done
  return 1
}

# blamed_by_workers TRIES: "PEER|worker W" for the first worker seen ended,
# within TRIES tenths of a second, naming PEER as the one it gave up on.
blamed_by_workers() {
  local tries pid named
  for ((tries = 0; tries < $1; tries++)); do
    for pid in "${!name_of[@]}"; do
      if [[ "${name_of[$pid]}" != worker* ]] || running "$pid"; then continue; fi
      named=$(peer_named_by "${name_of[$pid]}")
      if [[ -n "$named" ]]; then
        echo "$named|${name_of[$pid]}"
        return 0
      fi
    done
    sleep 0.1
  done
}

failed=""
while ((${#name_of[@]} > 0)); do
  next_exit
  [[ -n "$done_pid" && -n "${name_of[$done_pid]:-}" ]] || continue
  name=${name_of[$done_pid]}
  reaped "$done_pid" "$status"
  ((status == 0)) && continue
  if ((status >= 128 || status == 3)) && ((restarts < retries)); then
    restarts=$((restarts + 1))
    # A worker that gave up on a server that has died is that server's failure:
    # restarting the worker alone would only spend a retry.
    why="exit $status"
    what=died
    exited=$name
    if [[ "$name" == worker* ]]; then
      # A worker that gave up (exit 3) names the server or peer in its last words.
      named=""
      ((status != 3)) || named=$(peer_named_by "$name" 20)
      if [[ -n "$named" ]]; then
        still_running "$named" 10 && what="stopped answering"
        why="$name gave up on it: exit $status"
        name=$named
      else
        # Otherwise a server that has died is to blame. A worker may have heard
        # its server stopping a moment before the server exits: 2 s to be seen gone.
        for ((tries = 0; tries < 20; tries++)); do
          dead=""
          for pid in "${!name_of[@]}"; do
            if [[ "${name_of[$pid]}" == server* ]] && ! running "$pid"; then
              dead=$pid
              break
            fi
          done
          [[ -n "$dead" || $status -ne 3 ]] && break
          sleep 0.1
        done
        if [[ -n "$dead" ]]; then
          why="$name gave up on it: exit $status"
          name=${name_of[$dead]}
        fi
      fi
    fi
    if [[ "$exited" == server* ]] && ((status == 3)) && blamed=$(blamed_by_workers 30) &&
      [[ -n "$blamed" && "${blamed%|*}" != "$name" ]]; then
      # A server that gave up on its silent workers only outlasted them: they were
      # waiting on a stalled server or peer, and give up on it a moment later, naming it.
      still_running "${blamed%|*}" 10 && what="stopped answering"
      why="${blamed#*|} gave up on it: exit 3; $name gave up on its silent workers"
      name=${blamed%|*}
    fi
    # A worker that hosts its server takes the server with it.
    if [[ "$separate" == no && "$name" == worker* ]]; then
      [[ "$name" != "$exited" ]] || why="$name died: exit $status"
      name="server ${name#worker }"
    fi
    # Workers that exchange inside each step cannot take a restarted peer back
    # mid-step: they all restart, as for a server.
    also=""
    [[ "$name" != worker* || "$exchange" == no ]] ||
      also="; the other workers exchange with it inside every step"
    # A worker that another gave up waiting for (a stalled one) is restarted
    # with every process: the one that gave up starts again too.
    if [[ "$name" == server* || -n "$also" || "$name" != "$exited" ]]; then
      log "$name $what ($why)$also; restarting every server from the newest checkpoint they all have, and the workers (retry $restarts of $retries)"
      stop_all
      from=$(prepare_resume "$restarts")
      [[ -n "$from" ]] || log "no checkpoint to resume from; starting over"
      start_all "$from"
    else
      log "$name died (exit $status); restarting it: it rejoins at the servers' step (retry $restarts of $retries)"
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
[[ -z "$failed" ]] || finish failed 1

"$bin/dl-ckpt" verify "$run_dir/ckpt" >"$run_dir/verify.json"
accuracy=$(python3 - "$run_dir/worker-0.jsonl" <<'PY'
import json, sys
done = [r for r in (json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")) if r.get("event") == "done"]
if done and "test_accuracy" in done[-1]:
    print(done[-1]["test_accuracy"])
PY
)
log "done: ${accuracy:+test accuracy $accuracy; }checkpoints in $run_dir/ckpt (verified)"
finish "done" 0
