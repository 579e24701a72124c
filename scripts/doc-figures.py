#!/usr/bin/env python3
"""Rewrites the figures README.md and docs/ quote from what the tools say now,
so that none is typed by hand. A figure sits between two markers:

    <!-- figure:NAME -->text<!-- /figure -->

and NAME is one of FIGURES below. Usage:
    scripts/doc-figures.py [--check] [BUILD_DIR]   (default: build)
--check changes nothing and exits 1, naming each stale figure, when a
document does not say what the tools say.
"""
import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "docs" / "planner.md"]
MARKER = re.compile(r"<!-- figure:([a-z0-9-]+) -->(.*?)<!-- /figure -->", re.S)


def plan(build, *args):
    out = subprocess.run([str(build / "dl-plan"), *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def alexnet_hybrid(build):
    """AlexNet on configs/clusters/1gbe-8node.yaml: chosen, all-data, all-model step."""
    p = plan(build, str(ROOT / "configs/models/alexnet.yaml"), "--cluster",
             str(ROOT / "configs/clusters/1gbe-8node.yaml"))
    t = p["planner"]["totals"]
    return (f"{t['chosen']['seconds']:.1f} s per step against {t['all_data']['seconds']:.1f} all-data and "
            f"{t['all_model']['seconds']:.1f} all-model")


def bench_summary(build):
    """The bench run docs/performance.md shows: its rows within their bound, and each
    model's one-process step at one thread against the peer's."""
    run = json.loads((ROOT / "docs" / "performance.json").read_text())
    sys.path.insert(0, str(ROOT / "bench"))
    from report import machine, rows_met
    rows = run["rows"]
    steps = [r for r in rows if r["unit"] == "ms/step" and r.get("threads") == 1 and
             not {"workers", "compute", "peer_side", "device"} & r.keys()]
    return (f"{rows_met(run)} of {len(rows)} rows within their bound, at commit {run['commit']} on {machine(run)}; "
            "one process at one thread, shoal's step over PyTorch's: " +
            ", ".join(f"{r['model']} {r['ratio']:.2f}" for r in steps))


FIGURES = {"alexnet-hybrid": alexnet_hybrid, "bench-summary": bench_summary}


def main():
    args = sys.argv[1:]
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    build = pathlib.Path(args[0] if args else ROOT / "build").resolve()
    values, stale = {}, []
    for doc in DOCS:
        text = doc.read_text()

        def replace(match):
            name = match.group(1)
            if name not in FIGURES:
                sys.exit(f"{doc}: no figure named '{name}' (scripts/doc-figures.py knows {sorted(FIGURES)})")
            if name not in values:
                values[name] = FIGURES[name](build)
            if match.group(2) != values[name]:
                stale.append(f"{doc.relative_to(ROOT)}: figure '{name}' says '{match.group(2)}', "
                             f"the tools say '{values[name]}'")
            return f"<!-- figure:{name} -->{values[name]}<!-- /figure -->"

        new = MARKER.sub(replace, text)
        if not check and new != text:
            doc.write_text(new)
    for line in stale:
        print(line, file=sys.stderr)
    if check and stale:
        print("run scripts/doc-figures.py to regenerate them", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
