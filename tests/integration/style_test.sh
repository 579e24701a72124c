#!/usr/bin/env bash
# The tree's layout is clang-format's (.clang-format) and its scripts are
# shellcheck clean; each check catches a violation planted in a copy.
. "$(dirname "$0")/lib.sh"

"$root/scripts/check-format.sh" "$root" || fail "lines clang-format would change (above)"
ok "every C++ file is formatted"
mkdir -p "$tmp/tree/lib"
cp "$root/.clang-format" "$tmp/tree/"
printf 'int  f( int x ){return x;}\n' >"$tmp/tree/lib/bad.cpp"
(cd "$tmp/tree" && clang-format --dry-run --Werror lib/bad.cpp 2>/dev/null) && fail "a misformatted file passed"
ok "a misformatted file is caught"

shellcheck "$root"/scripts/*.sh "$root"/scripts/slurm/*.sbatch || fail "shellcheck warnings in scripts/ (above)"
ok "scripts/ is shellcheck clean"
