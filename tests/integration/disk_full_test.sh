#!/usr/bin/env bash
# A full disk under the checkpoints stops the run, and loses nothing already
# written: the checkpoints go to a 3 MB tmpfs that holds one set and a half
# (two servers, about 0.9 MB each). The failures show at once in the
# supervisor's output; after train.checkpoint_failures of them in a row the
# run stops with exit 1, keeping the complete set of step 50, and the server
# that gave up writes its last snapshot to the rescue directory. Given room
# again, --resume goes on from step 50 and checkpoints again.
. "$(dirname "$0")/lib.sh"
require_root

run=$tmp/run
mkdir -p "$run/ckpt" "$tmp/tmpdir"
mount -t tmpfs -o size=3m tmpfs "$run/ckpt" 2>"$tmp/err" || {
  echo "skipped: cannot mount a tmpfs here: $(cat "$tmp/err")"
  exit 77
}
unmount() {
  local pids
  pids=$(jobs -p)
  # shellcheck disable=SC2086  # one word per process
  [[ -z "$pids" ]] || kill $pids 2>/dev/null || true
  sleep 0.2
  umount "$run/ckpt" 2>/dev/null || true
  cleanup
}
trap unmount EXIT

train=(env SHOAL_BIN="$bin" TMPDIR="$tmp/tmpdir" "$root/scripts/train-local.sh" --no-eval
  "$root/configs/fashion-mlp.yaml" cluster.nservers_per_group=2 train.steps=3000 train.checkpoint_every=50
  train.display_every=50 data.shards="$(shards_for 2)")
rc=0
RUN_DIR=$run timeout 120 "${train[@]}" >"$tmp/train.out" 2>"$tmp/train.err" || rc=$?
((rc == 1)) || fail "the run exited $rc, want 1; $(tail -n 20 "$tmp/train.err")"
grep -qE "server [01]: checkpoint of step [0-9]+ failed \(1 of 3 allowed in a row\): .*(takes [0-9]+ bytes and its filesystem has [0-9]+ free|No space left)" \
  "$tmp/train.err" || fail "the supervisor's output does not show the first failure: $(cat "$tmp/train.err")"
grep -q "gave up checkpointing into '$run/ckpt' after 3 failed writes in a row" "$tmp/train.err" ||
  fail "the output does not say why the run stopped: $(cat "$tmp/train.err")"
last=$(python3 -c '
import json, sys
steps = [r["step"] for r in map(json.loads, open(sys.argv[1])) if r.get("event") == "step"]
print(max(steps, default=0))' "$run/worker-0.jsonl")
((last < 3000)) || fail "training went on to step $last although no checkpoint could be written"
ok "the failures show at once, and the run stops with exit 1 at step $last of 3000"

"$bin/dl-ckpt" prepare-resume "$run/ckpt" -o "$tmp/resume" >"$tmp/prepared.json" ||
  fail "no complete set is left: $(ls "$run/ckpt")"
[[ $(jq .step "$tmp/prepared.json") == 50 ]] || fail "the newest complete set is not step 50: $(cat "$tmp/prepared.json")"
# The file a server's log names: a server stopped while it rescued its own may leave a file unnamed.
rescued=$(sed -nE "s/.*could not take, to '([^']+)'\$/\1/p" "$run"/server-*.log | head -n 1)
[[ -n $rescued ]] || fail "no server said where it rescued its checkpoint: $(tail -n 5 "$run"/server-*.log)"
[[ $rescued == "$tmp/tmpdir/shoal-rescue/server-"*"-step-"*".ckpt" && -f $rescued ]] ||
  fail "the rescued checkpoint '$rescued' is not in \$TMPDIR/shoal-rescue"
"$bin/dl-ckpt" verify "$rescued" >/dev/null || fail "the rescued checkpoint '$rescued' does not verify"
ok "the complete set of step 50 is kept, and the last snapshot that failed is in $rescued"

mount -o remount,size=64m "$run/ckpt"
# The resumed run has thousands of steps to go: it is stopped once it has
# written a complete set past the one it failed on, and stops as interrupted.
env SHOAL_BIN="$bin" TMPDIR="$tmp/tmpdir" "$root/scripts/train-local.sh" --resume "$run" \
  >"$tmp/resume.out" 2>"$tmp/resume.err" &
resumed=$!
newest=0
for ((i = 0; i < 1200 && newest <= 100; i++)); do  # up to two minutes on a loaded machine
  kill -0 "$resumed" 2>/dev/null || break
  sleep 0.1
  newest=$("$bin/dl-ckpt" --json ls "$run/ckpt" 2>/dev/null | jq '[.steps[] | select(.complete) | .step] | max // 0') ||
    newest=0
done
kill -TERM "$resumed" 2>/dev/null || true
rc=0
wait "$resumed" || rc=$?
grep -q "resuming at step 50" "$tmp/resume.err" || fail "--resume did not go on from step 50: $(cat "$tmp/resume.err")"
((newest > 100)) || fail "with room again, --resume wrote no complete set past step 100 (exit $rc): $(tail -n 20 "$tmp/resume.err")"
((rc == 130)) || fail "the resumed run, stopped, exited $rc, want 130: $(tail -n 20 "$tmp/resume.err")"
ok "with room again, --resume goes on from step 50 and writes a complete set of step $newest"
