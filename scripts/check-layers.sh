#!/usr/bin/env bash
# Fails on an include that climbs: lib/ is layered, and a file may include
# only its own directory's headers and those of lower layers. The layers,
# lowest first (docs/design.md draws them):
#   core tensor | device | ops data | comm ckpt | config | layers | graph | plan | net ps | train
# cmd/ may include anything; nothing in lib/ includes cmd/.
set -euo pipefail
root=$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")/..}" && pwd)
declare -A level=([core]=0 [tensor]=0 [device]=1 [ops]=2 [data]=2 [comm]=3 [ckpt]=3 [config]=4
                  [layers]=5 [graph]=6 [plan]=7 [net]=8 [ps]=8 [train]=9)
bad=0
for file in "$root"/lib/*/*; do
  dir=$(basename "$(dirname "$file")")
  [[ -n "${level[$dir]:-}" ]] || { echo "check-layers: lib/$dir has no layer: add it to ${BASH_SOURCE[0]}" >&2; bad=1; continue; }
  while IFS=: read -r line include; do
    target=${include%%/*}
    [[ "$target" == "$dir" ]] && continue
    if [[ -z "${level[$target]:-}" ]]; then
      echo "lib/$dir/$(basename "$file"):$line: includes '$include', which is in no layer" >&2; bad=1
    elif (( level[$target] >= level[$dir] )); then
      echo "lib/$dir/$(basename "$file"):$line: includes '$include': $target is not below $dir" >&2; bad=1
    fi
  done < <(grep -n -o -E '^#include "[^"]+"' "$file" | sed -E 's/#include "(.*)"/\1/')
done
exit $bad
