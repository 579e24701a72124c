#!/usr/bin/env bash
# docs/performance.md is what bench/report.py makes of the bench run it quotes
# (docs/performance.json); the page marks each row against its bound, and
# --check catches a page edited by hand and a file that is not a bench run.
. "$(dirname "$0")/lib.sh"

report=$root/bench/report.py
python3 "$report" "$root/docs/performance.json" --check "$root/docs/performance.md" ||
  fail "docs/performance.md is not what bench/report.py makes of docs/performance.json (above)"
ok "docs/performance.md is generated from the run it quotes"

# Four rows: one faster than its bound, one higher-is-better row short of
# its bound, a quality row within its share, and an accuracy row whose mean
# difference is within its points although one pair's is not.
cat >"$tmp/run.json" <<'JSON'
{"commit": "abc1234", "time": "2026-01-01T00:00:00Z", "cpu": "a test CPU", "host_cpus": 2, "rows": [
 {"case": "fast row", "unit": "ms/step", "target": 0.7, "shoal": 1.0, "peer": 2.0,
  "ratio": 0.5, "ratio_min": 0.45, "ratio_max": 0.55, "pairs": [{}, {}, {}],
  "shoal_spread": [0.9, 1.2], "peer_spread": [1.0, 1.05],
  "details": {"compute": 0.9, "input": 0.1}},
 {"case": "slow exchange", "unit": "GB/s", "target": 0.8, "higher_is_better": true, "shoal": 7.0,
  "peer": 10.0, "ratio": 0.7, "ratio_min": 0.6, "ratio_max": 0.75, "pairs": [{}, {}, {}]},
 {"case": "accuracy row", "unit": "accuracy", "within": 0.0035, "shoal": 0.871, "peer": 0.872,
  "ratio": 0.99885, "ratio_min": 0.998, "ratio_max": 0.999, "pairs": [{}, {}, {}]},
 {"case": "bf16 accuracy", "unit": "accuracy", "within_points": 0.3, "shoal": 0.86, "peer": 0.861,
  "ratio": 0.998, "ratio_min": 0.99, "ratio_max": 1.01, "difference_points": -0.1, "difference_points_se": 0.12,
  "difference_points_min": -0.5, "difference_points_max": 0.2, "pairs": [{}, {}, {}, {}]}]}
JSON
python3 "$report" "$tmp/run.json" -o "$tmp/page.md" || fail "bench/report.py on a four-row run"
grep -qF '| fast row | 1 | 2 | ms/step | 0.50 | 0.45–0.55 | 3 | 0.90–1.20 / 1.00–1.05 | <=0.7 | yes |' "$tmp/page.md" ||
  fail "the fast row is not marked met: $(cat "$tmp/page.md")"
grep -qF '| slow exchange | 7 | 10 | GB/s | 0.70 | 0.60–0.75 | 3 | – / – | >=0.8 | **no** |' "$tmp/page.md" ||
  fail "the exchange row short of its bound is not marked: $(cat "$tmp/page.md")"
grep -qF '| accuracy row | 0.871 | 0.872 | accuracy | 1.00 | 1.00–1.00 | 3 | – / – | ±0.35% | yes |' "$tmp/page.md" ||
  fail "the accuracy row is not marked within its share: $(cat "$tmp/page.md")"
grep -qF '| bf16 accuracy | 0.86 | 0.861 | accuracy | -0.10 ± 0.12 pts | -0.50–+0.20 pts | 4 | – / – | ±0.3 pts | yes |' \
  "$tmp/page.md" || fail "the bf16 accuracy row is not marked by its mean difference: $(cat "$tmp/page.md")"
grep -qF '3 of 4 rows are within their bound' "$tmp/page.md" || fail "the count of rows met is wrong"
grep -qF 'on a test CPU with 2 CPUs' "$tmp/page.md" || fail "the page does not name the run's CPU"
grep -qF -- '- ms/step: compute 0.90, input 0.10' "$tmp/page.md" || fail "the page does not say where the time went"
ok "each row is marked against its bound, and the page says where the time went"

sed 's/| 0.50 |/| 0.40 |/' "$tmp/page.md" >"$tmp/edited.md"
expect_failure 1 "edited.md is not what .*run.json gives" python3 "$report" "$tmp/run.json" --check "$tmp/edited.md"
ok "a page edited by hand fails --check"

head -c 100 "$tmp/run.json" >"$tmp/cut.json"
expect_failure 1 "cannot read the bench run .*cut.json" python3 "$report" "$tmp/cut.json"
echo '{"commit": "abc1234"}' >"$tmp/other.json"
expect_failure 1 "other.json is not a bench run .*'rows'" python3 "$report" "$tmp/other.json"
ok "a cut file and one that is not a bench run are refused, named"

# compare_peers.py: a row gets --repeats pairs, and up to --wide-repeats while any of its ratios strays
# more than 10% from their median; a row with its own count of pairs gets that many.
python3 - "$root/bench" <<'PY' || fail "compare_peers.enough() measures too few or too many pairs (above)"
import sys, types
sys.path.insert(0, sys.argv[1])
from compare_peers import enough, pair, summarise, within_bound
a = types.SimpleNamespace(repeats=3, wide_repeats=5)
assert not enough(a, [[]]) and not enough(a, [[1.0, 1.0]])
assert enough(a, [[1.0, 1.05, 0.95]])
assert not enough(a, [[1.0, 1.2, 0.95]]) and not enough(a, [[1.0, 1.0, 1.0], [1.0, 0.8, 1.0]])
assert enough(a, [[1.0, 1.2, 0.95, 1.0, 1.3]])
assert not enough(a, [[1.0] * 7], pairs=8) and enough(a, [[1.0, 1.3] * 4], pairs=8)
row = summarise("acc", {"within_points": 0.3}, [pair(0.86, 0.861), pair(0.87, 0.865)])
assert abs(row["difference_points"] - 0.2) < 1e-9 and abs(row["difference_points_se"] - 0.3) < 1e-9, row
assert within_bound(row) and not within_bound(dict(row, difference_points=-0.4))
PY
ok "three pairs for a steady row, five for one whose pairs spread more than 10%, a row's own count where it has one"
