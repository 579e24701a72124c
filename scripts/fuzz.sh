#!/usr/bin/env bash
# Runs every fuzz target of a fuzz build (make fuzz) for SECONDS each, JOBS at
# a time, from its seed corpus (fuzz_seeds) and the corpus earlier runs grew
# in BUILD/fuzz/corpus/TARGET. Ends with a line per target: executions,
# executions per second, corpus size; a crash, leak, timeout or out-of-memory
# leaves its input in BUILD/fuzz/artifacts/ and fails the run.
#   scripts/fuzz.sh BUILD_DIR SECONDS [JOBS]
set -euo pipefail
build=$(realpath "${1:?usage: scripts/fuzz.sh BUILD_DIR SECONDS [JOBS]}")
seconds=${2:?usage: scripts/fuzz.sh BUILD_DIR SECONDS [JOBS]}
jobs=${3:-2}
work="$build/fuzz"
rm -rf "$work/seeds" "$work/logs"
mkdir -p "$work/corpus" "$work/artifacts" "$work/logs"
"$build/tests/fuzz/fuzz_seeds" "$work/seeds"

targets=()
for exe in "$build"/tests/fuzz/*_fuzzer; do targets+=("$(basename "$exe")"); done
run_one() {
  local target=$1 name=${1%_fuzzer}
  mkdir -p "$work/corpus/$name"
  # -timeout: one input may take 10 s before it counts as a hang;
  # -rss_limit_mb: a reader that allocates what the input claims is caught.
  "$build/tests/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/$name-" "$work/corpus/$name" "$work/seeds/$name" \
    >"$work/logs/$name.log" 2>&1
}
export -f run_one
export build work seconds
failed=0
# shellcheck disable=SC2016  # $(basename ...) runs in the inner shell, for each target
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {} || { echo "fuzz: {} failed; see '"$work"'/logs/$(basename {} _fuzzer).log" >&2; exit 1; }' \
  || failed=1

printf '%-12s %12s %10s %8s\n' target executions exec/s corpus
for target in "${targets[@]}"; do
  name=${target%_fuzzer}
  log="$work/logs/$name.log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  printf '%-12s %12s %10s %8s\n' "$name" "${execs:-?}" "${rate:-?}" "$(find "$work/corpus/$name" -type f | wc -l)"
done
if ((failed)); then
  echo "fuzz: a target found a bug; its input is in $work/artifacts/" >&2
  ls -l "$work/artifacts" >&2
  exit 1
fi
