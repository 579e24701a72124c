#!/usr/bin/env bash
# Fails on a C++ line that clang-format (.clang-format at the root) would
# change, naming the file and line. Fix with:
#   git ls-files '*.cpp' '*.h' '*.cu' | xargs clang-format -i
#   scripts/check-format.sh [ROOT]
set -euo pipefail
root=$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")/..}" && pwd)
cd "$root"
command -v clang-format >/dev/null || { echo "check-format: clang-format is not installed" >&2; exit 1; }
files=()
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu')
else
  mapfile -t files < <(find lib cmd tests bench -name '*.cpp' -o -name '*.h' -o -name '*.cu')
fi
clang-format --dry-run --Werror "${files[@]}"
