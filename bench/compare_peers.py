#!/usr/bin/env python3
"""shoal vs the PyTorch peers, as ratios measured in one run on one machine.

- single process, batch 64, 1 and 2 threads, mlp and cnn:
  dl-worker --standalone  vs  peers/torch_fashion.py
- synchronous data parallel, 2 workers x batch 32 (BSP, 1 server), mlp and cnn, with
  train.overlap on (each layer's parameters travel beside backprop) and off (one exchange
  after it): scripts/train-local.sh  vs  peers/torch_ddp.py --world 2

Each figure is the median ms per training step. Usage: bench/run.sh [--steps N]
[--models mlp,cnn] [--bsp-only]
"""
import argparse, json, os, subprocess, sys, tempfile, time


def run(cmd, **kw):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)
    return [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]


def last(records, event):
    return [r for r in records if r.get("event") == event][-1]


def shards(a, n):
    d = os.path.join(a.bin, "bench-shards", f"fashion-mnist-{n}")
    if not os.path.exists(os.path.join(d, "manifest.json")):
        run([os.path.join(a.bin, "dl-shard"), "--dataset", "fashion-mnist", "--out", d, "--shards", str(n)])
    return d


def shoal_single(a, model, threads, tmp):
    plan = os.path.join(tmp, f"{model}-single.json")
    subprocess.run([os.path.join(a.bin, "dl-plan"), os.path.join(a.root, "configs", f"fashion-{model}.yaml"),
                    "--set", "train.batch_size=64", "--set", "cluster.nworkers_per_group=1", "-o", plan], check=True)
    r = run([os.path.join(a.bin, "dl-worker"), "--plan", plan, "--standalone", "--no-eval", "--threads", str(threads),
             "--steps", str(a.steps), "--shards", shards(a, 1)])
    return last(r, "done")["ms_per_step_median"]


def peer_single(a, model, threads):
    r = run(["/usr/bin/python3", os.path.join(a.peers, "torch_fashion.py"), model, "--threads", str(threads),
             "--batch", "64", "--steps", str(a.steps)])
    return r[-1]["ms_per_step_median"]


def shoal_bsp(a, model, tmp, overlap):
    run_dir = os.path.join(tmp, f"{model}-bsp-overlap-{'on' if overlap else 'off'}")
    env = dict(os.environ, SHOAL_BIN=a.bin, RUN_DIR=run_dir)
    subprocess.run([os.path.join(a.root, "scripts", "train-local.sh"), os.path.join(a.root, "configs", f"fashion-{model}.yaml"),
                    f"train.steps={a.steps}", "train.batch_size=32", "cluster.nworkers_per_group=2",
                    f"train.overlap={'true' if overlap else 'false'}", f"data.shards={shards(a, 2)}"],
                   check=True, env=env, capture_output=True)
    ms = []
    for w in range(2):
        with open(os.path.join(run_dir, f"worker-{w}.jsonl")) as f:
            ms.append(last([json.loads(l) for l in f if l.startswith("{")], "done")["ms_per_step_median"])
    return sorted(ms)[len(ms) // 2] if len(ms) % 2 else sum(ms) / len(ms)


def peer_ddp(a, model):
    r = run(["/usr/bin/python3", os.path.join(a.peers, "torch_ddp.py"), model, "--world", "2", "--batch", "32",
             "--steps", str(a.steps)])
    return r[-1]["ms_per_step_median"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True); ap.add_argument("--bin", required=True)
    ap.add_argument("--peers", required=True); ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--models", default="mlp,cnn")
    ap.add_argument("--bsp-only", action="store_true", help="only the BSP rows (overlap on and off vs torch_ddp)")
    a = ap.parse_args()
    commit = subprocess.run(["git", "-C", a.root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in a.models.split(","):
            for threads in () if a.bsp_only else (1, 2):
                s, p = shoal_single(a, model, threads, tmp), peer_single(a, model, threads)
                rows.append({"case": f"{model} single process, batch 64, {threads} thread(s)", "model": model,
                             "shoal_ms": s, "peer": "torch_fashion.py", "peer_ms": p, "ratio": s / p, "target": 1.0})
            # The peer runs between the two shoal runs, so that a shared machine's
            # drift over the minutes weighs on both ratios alike.
            on = shoal_bsp(a, model, tmp, overlap=True)
            p = peer_ddp(a, model)
            off = shoal_bsp(a, model, tmp, overlap=False)
            for overlap, s in (("on", on), ("off", off)):
                rows.append({"case": f"{model} BSP 2 workers x 32, overlap {overlap}", "model": model,
                             "overlap": overlap == "on", "shoal_ms": s, "peer": "torch_ddp.py --world 2", "peer_ms": p,
                             "ratio": s / p, "target": 0.8})
    result = {"commit": commit, "steps": a.steps, "host_cpus": os.cpu_count(),
              "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": rows}
    with open(a.out, "w") as f:
        json.dump(result, f, indent=2)
    print(f"{'case':44} {'shoal ms':>9} {'peer ms':>9} {'ratio':>6} {'target':>6}")
    for r in rows:
        print(f"{r['case']:44} {r['shoal_ms']:9.2f} {r['peer_ms']:9.2f} {r['ratio']:6.2f} {'<=' + str(r['target']):>6}")
    print(f"written to {a.out}")


if __name__ == "__main__":
    main()
