#!/usr/bin/env bash
# lib/ is layered: no include climbs (scripts/check-layers.sh, whose table
# docs/design.md draws), and the check itself catches one that does.
. "$(dirname "$0")/lib.sh"

"$root/scripts/check-layers.sh" "$root" || fail "an include climbs (above)"
ok "no include in lib/ climbs"

# A copy of lib/ with one climbing include must be refused, naming it.
mkdir -p "$tmp/tree"
cp -r "$root/lib" "$root/scripts" "$tmp/tree/"
echo '#include "train/worker.h"' >>"$tmp/tree/lib/comm/message.cpp"
expect_failure 1 "lib/comm/message.cpp:[0-9]+: includes 'train/worker.h': train is not below comm" \
  "$tmp/tree/scripts/check-layers.sh" "$tmp/tree"
ok "a climbing include is refused naming the file, line and layers"
