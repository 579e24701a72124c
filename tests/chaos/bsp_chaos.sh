#!/usr/bin/env bash
# The BSP chaos mix, outside the normal suite (it takes minutes): RUNS runs
# of the MLP (2 workers, 2 servers) under train-local, each disturbed up to 3
# times by SIGKILL, SIGTERM or SIGSTOP of a random server or worker (a run
# whose processes were not there at a chosen moment gets fewer). Every
# run must end either bit for bit equal to the undisturbed run, or with exit
# 1 and a complete checkpoint set from which --resume reaches it; no process
# may outlive its supervisor by more than 2 s, and no run may hang (a bound
# of 180 s each). Prints a JSON line per run and one of totals; exit 1 when
# any run broke the rule.
#   tests/chaos/bsp_chaos.sh BUILD_DIR REPO_ROOT [RUNS] [SEED]
. "$(dirname "$0")/../integration/lib.sh"
runs=${3:-20}
RANDOM=${4:-1}

steps=2000
train=(env SHOAL_BIN="$bin" "$root/scripts/train-local.sh" --no-eval "$root/configs/fashion-mlp.yaml"
  cluster.nservers_per_group=2 cluster.timeout_ms=3000 "train.steps=$steps" train.checkpoint_every=100
  train.display_every=50 data.shards="$(shards_for 2)")
RUN_DIR=$tmp/calm "${train[@]}" >/dev/null 2>"$tmp/calm.err" || fail "the undisturbed run failed: $(cat "$tmp/calm.err")"

# same_as_calm DIR: whether DIR's final checkpoints are the undisturbed run's, bit for bit.
same_as_calm() {
  local s final
  for s in 0 1; do
    final=$(printf '%s/ckpt/server-%d-step-%010d.ckpt' "$1" "$s" "$steps")
    [[ -f "$final" ]] || return 1
    "$bin/dl-ckpt" diff "$(printf '%s/calm/ckpt/server-%d-step-%010d.ckpt' "$tmp" "$s" "$steps")" "$final" \
      >"$tmp/diff.json" 2>/dev/null || return 1
    [[ $(jq .max_abs "$tmp/diff.json") == 0 ]] || return 1
  done
}

kinds=(KILL TERM STOP)
broken=0
declare -A outcomes=()
for ((i = 1; i <= runs; i++)); do
  dir=$tmp/run-$i
  RUN_DIR=$dir timeout -s KILL 180 "${train[@]}" >/dev/null 2>"$dir.err" &
  runner=$!
  signals=()
  for ((k = 0; k < 1 + RANDOM % 3; k++)); do
    sleep "$((RANDOM % 3)).$((RANDOM % 10))"
    mapfile -t pids < <(pgrep -f "(dl-server|dl-worker) --plan $dir/plan.json" || true)
    ((${#pids[@]} > 0)) || continue  # not started yet, or restarting, or done
    pid=${pids[RANDOM % ${#pids[@]}]}
    signal=${kinds[RANDOM % 3]}
    what=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -oE '(dl-server|dl-worker) --plan [^ ]+ --id [0-9]+' | sed 's/ --plan [^ ]*//')
    kill -"$signal" "$pid" 2>/dev/null && signals+=("$signal $what")
  done
  rc=0
  wait "$runner" || rc=$?
  sleep 2
  left=$(pgrep -fc "$dir/plan.json" || true)
  outcome=""
  if ((rc == 137)); then
    outcome=hung
  elif ((left > 0)); then
    outcome="orphans"
    pkill -KILL -f "$dir/plan.json" || true
  elif ((rc == 0)); then
    same_as_calm "$dir" && outcome=exact || outcome=differs
  elif ((rc == 1)); then
    if "$bin/dl-ckpt" prepare-resume "$dir/ckpt" -o "$dir/prepared" >/dev/null 2>&1 &&
      timeout -s KILL 180 env SHOAL_BIN="$bin" "$root/scripts/train-local.sh" --resume "$dir" >/dev/null 2>"$dir.resume.err" &&
      same_as_calm "$dir"; then
      outcome=failed-then-resumed-exact
    else
      outcome=failed-unrecoverable
    fi
  else
    outcome="exit-$rc"
  fi
  outcomes[$outcome]=$((${outcomes[$outcome]:-0} + 1))
  [[ "$outcome" == exact || "$outcome" == failed-then-resumed-exact ]] || broken=$((broken + 1))
  jq -cn --argjson run "$i" --arg outcome "$outcome" --argjson rc "$rc" --arg signals "${signals[*]}" \
    '{run: $run, outcome: $outcome, exit: $rc, signals: $signals}'
  [[ "$outcome" == exact || "$outcome" == failed-then-resumed-exact ]] || tail -n 5 "$dir.err" >&2
done
summary="{"
for o in "${!outcomes[@]}"; do summary+="\"$o\": ${outcomes[$o]}, "; done
echo "${summary%, }}" | jq -c "{runs: $runs, outcomes: .}"
((broken == 0))
