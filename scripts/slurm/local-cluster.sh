#!/usr/bin/env bash
# A real Slurm on this machine, for tests and trials: munged, slurmctld and
# N slurmd ("node1".."nodeN", all on 127.0.0.1), with state, sockets and logs
# under DIR. Stops exactly the daemons it started.
#
#   scripts/slurm/local-cluster.sh start DIR [NODES]   (as root; prints the env to use)
#   scripts/slurm/local-cluster.sh stop DIR
#
# Clients need SLURM_CONF=DIR/slurm.conf (start prints it).
set -euo pipefail
usage() { echo "usage: $0 start|stop DIR [NODES]" >&2; exit 2; }
[[ $# -ge 2 ]] || usage
action=$1 dir=$(mkdir -p "$2" && cd "$2" && pwd) nodes=${3:-2}
export SLURM_CONF=$dir/slurm.conf

# end PIDFILE...: SIGTERM to every daemon at once, SIGKILL to those left after 5 s.
end() {
  local pidfile pids=()
  for pidfile in "$@"; do
    [[ -f "$pidfile" ]] || continue
    pids+=("$(cat "$pidfile")")
    rm -f "$pidfile"
  done
  ((${#pids[@]} > 0)) || return 0
  kill "${pids[@]}" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "${pids[@]}" 2>/dev/null || break; sleep 0.1; done
  kill -9 "${pids[@]}" 2>/dev/null || true
}

stop() {
  # Jobs are cancelled while the controller still answers (a client waits for a dead one).
  if [[ -f "$dir/run/slurmctld.pid" ]] && kill -0 "$(cat "$dir/run/slurmctld.pid")" 2>/dev/null; then
    scancel --quiet --full "$(squeue -h -o %i 2>/dev/null | tr '\n' ' ')" 2>/dev/null || true
  fi
  end "$dir"/run/slurmd-*.pid "$dir/run/slurmctld.pid" "$dir/run/munged.pid"
}

start() {
  for tool in munged mungekey slurmctld slurmd sinfo; do
    command -v "$tool" >/dev/null || { echo "local-cluster: '$tool' is missing (scripts/install-deps.sh --slurm)" >&2; exit 1; }
  done
  mkdir -p "$dir"/{run,log,state,spool}
  local host user cpus
  host=$(hostname -s)
  user=$(id -un)
  cpus=4
  mungekey -c -f -k "$dir/munge.key"
  chmod 600 "$dir/munge.key"
  munged -S "$dir/run/munge.socket" --key-file="$dir/munge.key" --pid-file="$dir/run/munged.pid" \
    --log-file="$dir/log/munged.log" --seed-file="$dir/run/munge.seed" --force
  cat >"$dir/slurm.conf" <<CONF
ClusterName=shoal-local
SlurmctldHost=$host(127.0.0.1)
SlurmUser=$user
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/run/munge.socket
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
SlurmctldPort=$((6817 + 10 * (RANDOM % 100)))
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmdSpoolDir=$dir/spool/%n
StateSaveLocation=$dir/state
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MailProg=/bin/true
SchedulerParameters=bf_interval=1,sched_interval=2,batch_sched_delay=0
# A finished job's record is kept 5 s: sbatch --wait polls every 2 s where
# this is under 6 s, and ever more slowly (up to 32 s) above it.
MinJobAge=5
SlurmdParameters=config_overrides
JobAcctGatherType=jobacct_gather/none
NodeName=node[1-$nodes] NodeHostname=$host NodeAddr=127.0.0.1 Port=[$((16818 + RANDOM % 1000))-$((16818 + 1000))] CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
  # Node ports: one per node, consecutive.
  local first_port
  first_port=$((16818 + 10 * (RANDOM % 100)))
  sed -i "s/Port=\[[0-9]*-[0-9]*\]/Port=[$first_port-$((first_port + nodes - 1))]/" "$dir/slurm.conf"
  slurmctld -f "$dir/slurm.conf"
  for ((n = 1; n <= nodes; n++)); do slurmd -f "$dir/slurm.conf" -N "node$n"; done
  for _ in $(seq 100); do
    [[ $(sinfo -hN -t idle 2>/dev/null | wc -l) -ge $nodes ]] && break
    sleep 0.1
  done
  if [[ $(sinfo -hN -t idle 2>/dev/null | wc -l) -lt $nodes ]]; then
    echo "local-cluster: the nodes did not come up; logs in $dir/log" >&2
    sinfo -N >&2 || true
    stop
    exit 1
  fi
  echo "export SLURM_CONF=$dir/slurm.conf"
}

case $action in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac
