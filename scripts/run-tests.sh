#!/usr/bin/env bash
# Runs one build's test suite with ctest and ends with one line,
#   BUILD: N passed, N failed, N skipped
# also written to BUILD/test-summary.txt (for .ci/run). A skipped test (exit
# 77: it needs root, or a tool this machine lacks) is counted as skipped,
# never as passed. Exit status: ctest's.
#   scripts/run-tests.sh BUILD_DIR [CTEST_ARGS...]
set -uo pipefail
build=${1:?usage: scripts/run-tests.sh BUILD_DIR [CTEST_ARGS...]}
shift
junit="$build/test-results.xml"
rm -f "$junit"
(cd "$build" && ctest --output-on-failure --output-junit test-results.xml "$@")
rc=$?
summary=$(python3 - "$junit" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
except (OSError, ET.ParseError) as e:
    print(f"no test results ({e})")
    sys.exit(0)
counts = {"passed": 0, "failed": 0, "skipped": 0}
skipped = []
for case in cases:
    status = case.get("status")
    if status == "run": counts["passed"] += 1
    elif status in ("disabled", "notrun") or case.find("skipped") is not None:
        counts["skipped"] += 1
        skipped.append(case.get("name"))
    else: counts["failed"] += 1
line = ", ".join(f"{n} {k}" for k, n in counts.items())
print(line + (f" (skipped: {' '.join(skipped)})" if skipped else ""))
PY
)
echo "$build: $summary" | tee "$build/test-summary.txt"
exit $rc
