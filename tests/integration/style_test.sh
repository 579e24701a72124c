#!/usr/bin/env bash
# The tree's layout is clang-format's (.clang-format) and shellcheck finds
# nothing in its scripts; each check catches a violation planted in a copy.
. "$(dirname "$0")/lib.sh"

"$root/scripts/check-format.sh" "$root" || fail "lines clang-format would change (above)"
ok "every C++ file is formatted"
mkdir -p "$tmp/tree/lib"
cp "$root/.clang-format" "$tmp/tree/"
printf 'int  f( int x ){return x;}\n' >"$tmp/tree/lib/bad.cpp"
(cd "$tmp/tree" && clang-format --dry-run --Werror lib/bad.cpp 2>/dev/null) && fail "a misformatted file passed"
ok "a misformatted file is caught"

# -x: a script is checked with what it sources (tests/.shellcheckrc says where tests find it).
shellcheck -x -P SCRIPTDIR "$root"/scripts/*.sh "$root"/scripts/slurm/*.sbatch "$root"/bench/*.sh \
  "$root"/tests/*/*.sh || fail "shellcheck warnings in the scripts (above)"
ok "the scripts of scripts/, bench/ and tests/ are shellcheck clean"
mkdir -p "$tmp/tree/tests/integration"
cp "$root/tests/.shellcheckrc" "$tmp/tree/tests/"
cp "$root/tests/integration/lib.sh" "$tmp/tree/tests/integration/"
# shellcheck disable=SC2016  # the planted script's own expansions, unexpanded
printf '#!/usr/bin/env bash\n. "$(dirname "$0")/lib.sh"\nrm -rf $tmp/x\n' >"$tmp/tree/tests/integration/bad_test.sh"
shellcheck -x -P SCRIPTDIR "$tmp/tree/tests/integration/bad_test.sh" >/dev/null && fail "an unquoted expansion passed"
ok "an unquoted expansion is caught"
