#!/usr/bin/env python3
"""run-record.py RUN_DIR STATUS STARTED ENDED PLAN_HASH RESTARTS SHARDS COMMAND [ARG...]

Writes RUN_DIR/run.json, what a run was and how it ended, for reports that
never parse logs: the command line, commit, plan hash and job, the shard
directory its workers read (SHARDS, made absolute; "" if none yet), its start
and end, and every process's lives (pid, start, end, exit status) from
RUN_DIR/processes.jsonl, the supervisor's one line per start and exit. A run
that is resumed adds an attempt to the run.json it had. Written atomically.
Used by scripts/train-local.sh and scripts/slurm/train.sbatch."""
import json
import os
import sys

if len(sys.argv) < 9:
    sys.exit(__doc__.split("\n\n")[0])
run_dir, status, started, ended, plan_hash, restarts, shards, command = sys.argv[1:9]
events = [json.loads(l) for l in open(os.path.join(run_dir, "processes.jsonl")) if l.strip()]
processes = {}
for e in events:
    p = processes.setdefault(e["name"], {"name": e["name"], "runs": []})
    if e["event"] == "start":
        p["runs"].append({"pid": e["pid"], "started": e["time"]})
    else:
        for r in p["runs"]:
            if r["pid"] == e["pid"]:
                r.update(ended=e["time"], exit_status=e["status"])
plan = json.load(open(os.path.join(run_dir, "plan.json")))
previous = {}
try:
    previous = json.load(open(os.path.join(run_dir, "run.json")))
except (OSError, ValueError):
    pass
run = {"format": "shoal-run", "command": [command] + sys.argv[9:], "commit": plan.get("commit"),
       "plan_hash": plan_hash, "job": plan["job"],
       "shards": os.path.abspath(shards) if shards else previous.get("shards"),
       "started": previous.get("started", started),
       "attempts": previous.get("attempts", []) + [{"started": started, "ended": ended, "status": status,
                                                   "restarts": int(restarts)}],
       "ended": ended, "status": status, "restarts": previous.get("restarts", 0) + int(restarts),
       "processes": sorted(processes.values(), key=lambda p: p["name"])}
tmp = os.path.join(run_dir, "run.json.tmp")
with open(tmp, "w") as f:
    json.dump(run, f, indent=2)
os.replace(tmp, os.path.join(run_dir, "run.json"))
