#!/usr/bin/env bash
# A checkpoint disk that stops answering stops the run within its deadline,
# and loses nothing already written: the checkpoints go to an ext4 image,
# frozen (fsfreeze) once a complete set is on it, so that every write there
# blocks in the kernel as on a hung disk. Each server's write is stuck past
# train.checkpoint_timeout_s: the server says so and stops the run (exit 1),
# writing its last snapshot to the rescue directory; its stuck thread keeps
# it from ending, and the supervisor, which cannot reap it, says so and ends
# without it. Thawed, the stuck processes end, and the complete set from
# before the freeze is there to resume from.
. "$(dirname "$0")/lib.sh"
require_root

run=$tmp/run
mkdir -p "$run/ckpt" "$tmp/tmpdir"
truncate -s 64M "$tmp/disk.img"
mkfs.ext4 -q -F "$tmp/disk.img" >"$tmp/err" 2>&1 && mount -o loop "$tmp/disk.img" "$run/ckpt" 2>>"$tmp/err" || {
  echo "skipped: cannot mount an ext4 image here: $(cat "$tmp/err")"
  exit 77
}
thaw() { fsfreeze --unfreeze "$run/ckpt" 2>/dev/null || true; }
unmount() {
  thaw
  local pids
  pids=$(jobs -p)
  # shellcheck disable=SC2086  # one word per process
  [[ -z "$pids" ]] || kill $pids 2>/dev/null || true
  # The servers left stuck end once the disk answers; the mount is theirs until then.
  for ((i = 0; i < 100; i++)); do
    umount "$run/ckpt" 2>/dev/null && break
    sleep 0.1
  done
  cleanup
}
trap unmount EXIT

env SHOAL_BIN="$bin" TMPDIR="$tmp/tmpdir" RUN_DIR="$run" STOP_GRACE=2 "$root/scripts/train-local.sh" --no-eval \
  "$root/configs/fashion-mlp.yaml" cluster.nservers_per_group=2 train.steps=1000000 train.checkpoint_every=50 \
  train.checkpoint_timeout_s=2 train.display_every=50 data.shards="$(shards_for 2)" \
  >"$tmp/train.out" 2>"$tmp/train.err" &
train=$!
newest=0
for ((i = 0; i < 1200 && newest < 100; i++)); do  # up to two minutes on a loaded machine
  kill -0 "$train" 2>/dev/null || fail "the run ended before its first checkpoints: $(tail -n 20 "$tmp/train.err")"
  sleep 0.1
  newest=$("$bin/dl-ckpt" --json ls "$run/ckpt" 2>/dev/null | jq '[.steps[] | select(.complete) | .step] | max // 0') ||
    newest=0
done
((newest >= 100)) || fail "no complete checkpoint set of step 100 in two minutes: $(tail -n 20 "$tmp/train.err")"
fsfreeze --freeze "$run/ckpt"
frozen_at=$SECONDS
ok "the checkpoint disk is frozen with the complete set of step $newest on it"

rc=0
for ((i = 0; i < 600; i++)); do  # the run has a minute to stop
  kill -0 "$train" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$train" 2>/dev/null && fail "the run still goes on a minute after its disk froze: $(tail -n 20 "$tmp/train.err")"
wait "$train" || rc=$?
((rc == 1)) || fail "the run exited $rc, want 1: $(tail -n 20 "$tmp/train.err")"
grep -qE "server [01]: step [0-9]+'s checkpoint write to '$run/ckpt' has not ended in 2 s \(train.checkpoint_timeout_s\): the disk does not answer" \
  "$tmp/train.err" || fail "the output does not say that the disk does not answer: $(cat "$tmp/train.err")"
grep -qE "server [01] \(pid [0-9]+\) is stuck in the kernel, a thread of it in state .*D.*: it ends when that does; not waiting for it" \
  "$tmp/train.err" || fail "the supervisor does not say which process it left stuck: $(cat "$tmp/train.err")"
ok "the run stops with exit 1 $((SECONDS - frozen_at)) s after the freeze, naming the stuck disk and the processes left"

# Each server's snapshot that the disk could not take is in the rescue directory.
rescued=$(sed -nE "s/.*could not take, to '([^']+)'\$/\1/p" "$run"/server-*.log | head -n 1)
[[ -n $rescued ]] || fail "no server said where it rescued its checkpoint: $(tail -n 5 "$run"/server-*.log)"
"$bin/dl-ckpt" verify "$rescued" >/dev/null || fail "the rescued checkpoint '$rescued' does not verify"
ok "the last snapshot is in $rescued"

thaw
for ((i = 0; i < 300; i++)); do  # the stuck servers end once their writes do
  pgrep -f "dl-server .*$run" >/dev/null || break
  sleep 0.1
done
pgrep -f "dl-server .*$run" >/dev/null && fail "a server still runs 30 s after the disk answered again"
"$bin/dl-ckpt" prepare-resume "$run/ckpt" -o "$tmp/resume" >"$tmp/prepared.json" ||
  fail "no complete set is left: $(ls "$run/ckpt")"
step=$(jq .step "$tmp/prepared.json")
((step >= newest)) || fail "the newest complete set is step $step, older than step $newest from before the freeze"
ok "thawed, the stuck servers end, and the complete set of step $step is there to resume from"
