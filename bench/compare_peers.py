#!/usr/bin/env python3
"""shoal against the PyTorch peers of bench/peers/, as ratios (shoal ÷ peer; < 1 is
faster) measured side by side in one run on one machine.

Rows (--rows, any of):
- single: one process, batch 64, 1 and 2 threads: dl-worker --standalone against
  peers/torch_single.py;
- bsp: synchronous data parallel, W workers × 32 records (W = 1, 2, 4; one server),
  train.overlap on and off, and AllReduce (a server in each worker's process, overlap
  on; for W = 1 its one server in its process): scripts/train-local.sh against
  peers/torch_ddp.py --world W;
- tta: the CNN's training seconds to 88% test accuracy (--target-accuracy) (evaluated every 100 steps,
  evaluation excluded on both sides), BSP 2 × 32 (AllReduce) against DDP 2 × 32 and one process × 64
  against torch_single.py.
- bf16: train.compute: bf16 (products and convolutions in bfloat16, float32 sums), one
  process, batch 64, 1 and 2 threads: against peers/torch_single.py --bf16 (torch.autocast
  in bfloat16), and against shoal's own float32 step (the row's peer is shoal then); and
  each side's test accuracy in bfloat16 against its own in float32, trained from the same
  seed (ACCURACY_EPOCHS epochs at one thread): the mean of ACCURACY_PAIRS seeds'
  differences, in points, within 0.3 points.

- rbm: configs/fashion-rbm1.yaml (784-1000, CD-1, batch 100) for --rbm-epochs epochs, one
  process at 1 and 2 threads, against peers/torch_rbm.py: ms per step, and (quality, ratio
  of errors, within 5% asked) each epoch's mean training reconstruction error and the
  test set's at the end.

- char-rnn: SINGA's char-RNN (embedding 64, one GRU of 512, unroll 50, batch 32, Adam, clip
  norm 5) on the Linux kernel's source (scripts/linux-corpus.sh, 6 MB) for --rnn-steps steps,
  one process at 1 and 2 threads, against peers/torch_char_rnn.py (nn.GRU): ms per step,
  and the test set's loss after those steps (within 5% asked).

- convnets: configs/resnet20.yaml (batch 128) and configs/cifar10-singa.yaml (batch 100)
  on synthetic CIFAR-10 records (scripts/make-image-data.py cifar), configs/alexnet-67.yaml
  and configs/googlenet-64.yaml (batch 32) on synthetic images of their input's size
  (make-image-data.py npy, dl-shard --npy), one process at 1 and 2 threads, no augmentation,
  for --convnet-steps steps: dl-worker --standalone against peers/torch_convnet.py (the job's
  net built by peers/shoal_net.py, on the same arrays): ms per step.

- gpu (make bench-gpu; not among the default rows): one process, batch 64, on GPU 0:
  dl-worker --standalone with train.device=cuda against peers/torch_single.py --device cuda.

- gpu-convnets (make bench-gpu; not among the default rows): the convnets as above, one
  process on GPU 0, against peers/torch_convnet.py --device cuda.

- images: an ImageNet-shaped folder of JPEGs (scripts/make-image-data.py synthetic, 20
  classes x 40, sides 256-400): dl-shard --images (shorter side to 256, centre 224, stored
  as JPEG) against peers/pil_shard.py (PIL in processes), and the training loader
  (bench/loader_speed.cpp: random resized crop to 224, flip, normalise) against
  peers/torch_loader.py (torchvision's DataLoader, one process a worker), at 1 and 2
  threads; images a second, higher is better.

- png (not among the default rows): Fashion-MNIST's 60,000 training images as a folder of
  PNGs (scripts/make-image-data.py fashion-png), stored raw: dl-shard --images against
  peers/pil_shard.py at 1 and 2 threads, images a second, with each side's peak resident
  memory and the bytes it wrote.

- exchange: a 4 MB and a 64 MB tensor's update-get round trip through a parameter
  server against a raw NNG req/rep echo of the same bytes (bench/exchange_throughput.cpp);
  here the ratio is of throughputs, higher is better.

The peer runs on the kernels measured fastest for each row's shape: before its first
pair, a short probe of every OpenBLAS core type and ATen kernel set the CPU supports
(Bench.kernels), each checked against the libraries' own choices by its first losses
(to 1e-4; to 1e-2 for the convnets, whose batch norm carries rounding from step to step).
Each row keeps the chosen kernels, the probe's figures, the facts both sides report
of what they computed with (peers/common.py's kernels(), dl-worker's "kernels") and each
side's spread over its pairs.

Each row runs its sides alternately (shoal, peer, shoal, peer, …: --repeats pairs, and
up to --wide-repeats where a row's pair ratios stray more than 10% from their median; a
bf16 accuracy row ACCURACY_PAIRS of them whatever the options),
so a shared machine's drift weighs on both alike; pair i of a single, gpu, bsp, bf16 or tta row
runs both sides with seed i (the initial parameters and the data order), so a
time-to-accuracy row is measured over as many draws as pairs. A row's ratio is the
median of its pairs' ratios, with their range (an accuracy row is judged by its mean
difference instead), and the JSON keeps every pair. Under
each shoal speed row of single, gpu, bsp, bf16, rbm, char-rnn and convnets, where its time went
(the median run's), per step: worker 0's compute, input, encode, waiting on servers and decode, and the servers'
update, encode and decode, from the processes' own counters (`time_s`, `handle_s`,
...); and its operations a step (`flops_per_step`, the cost model's count) over its compute
time and over the whole step, as fractions of one thread's sgemm rate (`dl-plan calibrate`,
measured once a bench run) times its compute threads. Under each time-to-accuracy row,
each pair's steps to the target.
Usage: bench/run.sh [--rows single,bsp,tta,bf16,rbm,char-rnn,convnets,images,png,exchange,gpu,gpu-convnets] [--models mlp,cnn] [--repeats N] [--wide-repeats N] [--steps N]
"""
import argparse, itertools, json, math, os, signal, statistics, subprocess, sys, tempfile, time

EVAL_EVERY = 100
PROBE_STEPS = 60        # steps of a kernel probe (the first 10 not timed)
LOSS_TOLERANCE = 1e-4   # of a probe's first losses against the reference kernels'
CONVNET_LOSS_TOLERANCE = 1e-2
LENGTH_OPTIONS = {"--seed", "--steps", "--target-accuracy", "--eval-every", "--max-steps", "--epochs"}
# One run's test accuracy moves with its seed by more than the bf16 rows' bound. So such a
# row is the mean difference over several seeds, each seed training both sides, and the
# MLP, whose accuracy moves most, trains for longer.
ACCURACY_EPOCHS = {"mlp": 5, "cnn": 1}
ACCURACY_PAIRS = {"mlp": 8, "cnn": 6}
STEPS_PER_EPOCH = 938  # about an epoch: Fashion-MNIST's 60,000 training records in batches of 64


def shape_of(args):
    """A peer's arguments less those that set its seed or its length."""
    args, shape = list(map(str, args)), []
    while args:
        x = args.pop(0)
        if x in LENGTH_OPTIONS:
            args.pop(0)
        else:
            shape.append(x)
    return shape


def json_lines(text):
    return [json.loads(l) for l in text.splitlines() if l.startswith("{")]


def run_peak(cmd):
    """The JSON lines cmd prints, and its peak resident memory in KiB (its own, from wait4);
    the bench stops, with the tail of cmd's stderr, if it fails."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0), err.seek(0)
        if child.returncode != 0:
            sys.exit(f"bench: {' '.join(cmd)} exited {child.returncode}:\n{err.read().decode()[-2000:]}")
        return json_lines(out.read().decode()), usage.ru_maxrss


def run(cmd):
    return run_peak(cmd)[0]


def last(records, event):
    return [r for r in records if r.get("event") == event][-1]


WHERE = (("compute", "compute"), ("input", "input"), ("encode", "encode"), ("wait_servers", "waiting on servers"),
         ("decode", "decode"), ("server_update", "servers: update"), ("server_encode", "encode"),
         ("server_decode", "decode"))


def where_the_time_goes(records, peak_gflops, run_dir=None):
    """ms per step: worker 0's own counters (its done record's time_s) and, for a
    run with servers, theirs (each one's last record, in its own output or, for a
    server in its worker's process, in the worker's), summed over the servers.
    With them, the rate of worker 0's operations (its flops_per_step) over its
    compute time and over the whole step, each as a fraction of `peak_gflops`
    (one thread's sgemm rate) times its compute threads; and its layers' time
    summed by type (the done record's `layers`): the four costliest types' shares
    of the layers' time and the rates they computed at."""
    done = last(records, "done")
    # time_s covers layer_steps steps; an older dl-worker's covered every step it timed (steps_timed).
    t, steps = done.get("time_s"), done.get("layer_steps") or done.get("steps_timed") or done["steps"]
    if not t or not steps:
        return None
    profile = {k: 1000 * t[k] / steps for k in ("compute", "input", "encode", "wait_servers", "decode")}
    flops, threads = done.get("flops_per_step"), (done.get("kernels") or {}).get("compute_threads", 1)
    if flops and profile["compute"] > 0:
        peak = peak_gflops * threads
        profile.update(gflops_per_step=flops / 1e9, compute_gflops_per_s=flops / 1e6 / profile["compute"],
                       peak_gflops_per_s=peak, compute_of_peak=flops / 1e6 / profile["compute"] / peak,
                       step_of_peak=flops / 1e6 / (1000 * t["steps"] / steps) / peak)
    by_type, layer_steps = {}, done.get("layer_steps") or steps
    for layer in done.get("layers") or []:
        seconds, ops = by_type.get(layer["type"], (0.0, 0.0))
        by_type[layer["type"]] = (seconds + layer["forward_s"] + layer["backward_s"], ops + layer["flops_per_step"])
    total = sum(seconds for seconds, _ in by_type.values())
    if total > 0:
        profile["layer_types"] = [
            {"type": kind, "share": seconds / total, "gflops_per_s": ops * layer_steps / seconds / 1e9 if seconds else 0.0}
            for kind, (seconds, ops) in sorted(by_type.items(), key=lambda kv: -kv[1][0])[:4]]
    if run_dir:
        servers = []
        for name in sorted(os.listdir(run_dir)):
            if name.startswith(("server-", "worker-")) and name.endswith(".jsonl"):
                with open(os.path.join(run_dir, name)) as f:
                    servers += [r for r in json_lines(f.read()) if r.get("event") == "server_done"][-1:]
        # Replies are encoded while a request is handled: the update is the rest. The
        # servers count every step the worker timed.
        every = done.get("steps_timed") or done["steps"]
        profile["server_update"] = 1000 * sum(s["handle_s"] - s["encode_s"] for s in servers) / every
        profile["server_encode"] = 1000 * sum(s["encode_s"] for s in servers) / every
        profile["server_decode"] = 1000 * sum(s["decode_s"] for s in servers) / every
    return profile


def details_line(row):
    """Where the median shoal run's time went (its own counters), or each pair's steps to the target."""
    if "steps" in row["details"]:
        return "    steps to the target (shoal/peer): " + ", ".join(
            f"{x['shoal_details']['steps']}/{x['peer_details']['steps']}" for x in row["pairs"])
    d = row["details"]
    line = "    ms/step: " + ", ".join(f"{label} {d[k]:.2f}" for k, label in WHERE if k in d)
    if "compute_of_peak" in d:
        line += (f"\n    {d['gflops_per_step']:.3g} GFLOP a step, computed at {d['compute_gflops_per_s']:.1f} GFLOP/s:"
                 f" {d['compute_of_peak']:.2f} of the sgemm peak ({d['peak_gflops_per_s']:.1f} GFLOP/s),"
                 f" {d['step_of_peak']:.2f} over the whole step")
        if row.get("unit") == "ms/step":  # the same operations over the peer's median step
            peer = row.get("peer_side", "the peer")  # shoal in float32, for a bf16 row
            line += f"; {peer}'s whole step at {d['gflops_per_step'] / row['peer'] * 1000:.1f} GFLOP/s"
    if d.get("layer_types"):
        line += "\n    layers by type (share, GFLOP/s): " + ", ".join(
            f"{x['type']} {x['share']:.0%} {x['gflops_per_s']:.1f}" for x in d["layer_types"])
    return line


def bound_text(row):
    """A row's bound, as the table prints it."""
    if "within_points" in row:
        return f"±{row['within_points']:.2g} pts"
    if "within" in row:
        return f"±{100 * row['within']:.2g}%"
    return (">=" if row.get("higher_is_better") else "<=") + str(row["target"])


def difference_text(row):
    """An accuracy row's mean difference in points, ± its standard error (a row of one pair has none)."""
    se = row.get("difference_points_se")
    return f"{row['difference_points']:+.2f} ± {se:.2f} pts" if se is not None else f"{row['difference_points']:+.2f} pts"


def within_bound(row):
    """Whether a row's median ratio (an accuracy row's mean difference) meets its bound."""
    if "within_points" in row:
        return abs(row["difference_points"]) <= row["within_points"]
    if "within" in row:
        return abs(row["ratio"] - 1) <= row["within"]
    return row["ratio"] >= row["target"] if row.get("higher_is_better") else row["ratio"] <= row["target"]


def cpu_model():
    """The CPU's name, family and model, and which of the vector extensions the kernels
    choose among it has (Linux's /proc/cpuinfo), for a run's record."""
    try:
        with open("/proc/cpuinfo") as f:
            fields = dict(line.split(":", 1) for line in f.read().split("\n\n")[0].splitlines() if ":" in line)
    except OSError:
        return "an unknown CPU"
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    flags = fields.get("flags", "").split()
    extensions = ", ".join(x for x in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if x in flags) or "no AVX2"
    return (f"{fields.get('model name', 'an unknown CPU')} (family {fields.get('cpu family', '?')}, "
            f"model {fields.get('model', '?')}; {extensions})")


def kernels_line(facts):
    """What each side of a row computed with, in one line."""
    parts = []
    if facts.get("peer"):
        c = facts["peer"]["chosen"]
        if "probe_ms" not in c:  # GPU_KERNELS
            parts.append("peer on its libraries' own kernels (a GPU row)")
        else:
            parts.append(f"peer OpenBLAS {c['blas_core']}, ATen {c['cpu_capability']} (fastest of "
                         + ", ".join(f"{k} {v:.2f}" for k, v in sorted(c["probe_ms"].items(), key=lambda kv: kv[1]))
                         + " ms)")
    if facts.get("shoal"):
        k = facts["shoal"]
        parts.append(f"shoal sgemm {k['sgemm']}, oneDNN {k['onednn']}, {k['compute_threads']} thread(s)")
    return "    kernels: " + "; ".join(parts)


GPU_KERNELS = {"blas_core": "default", "cpu_capability": "default"}


def peer_python():
    """Debian's python3 holds torch and numpy (SHOAL_PEER_PYTHON: another that does, a GPU machine's, say)."""
    return os.environ.get("SHOAL_PEER_PYTHON", "/usr/bin/python3")


class Bench:
    def __init__(self, a, tmp):
        self.a, self.tmp, self.runs = a, tmp, 0
        self.choices = {}  # kernels(): (script, shape...) -> the peer's fastest kernels
        self.facts = {}    # what each side last computed with: {"peer": ..., "shoal": ...}
        self.sgemm_gflops = None  # one thread's, measured once (peak())

    def tool(self, name):
        return os.path.join(self.a.bin, name)

    def job(self, model):
        return os.path.join(self.a.root, "configs", f"fashion-{model}.yaml")

    def peak(self):
        """One compute thread's sgemm rate, GFLOP/s, as dl-plan calibrate measures it."""
        if self.sgemm_gflops is None:
            out = subprocess.run([self.tool("dl-plan"), "calibrate"], capture_output=True, text=True, check=True).stdout
            self.sgemm_gflops = float(next(l.split(":")[1] for l in out.splitlines()
                                           if l.strip().startswith("gflops_per_worker:")))
        return self.sgemm_gflops

    def shards(self, n):
        d = os.path.join(self.a.bin, "bench-shards", f"fashion-mnist-{n}")
        if not os.path.exists(os.path.join(d, "manifest.json")):
            run([self.tool("dl-shard"), "--dataset", "fashion-mnist", "--out", d, "--shards", str(n)])
        return d

    def peer_command(self, script, args):
        return [peer_python(), os.path.join(self.a.root, "bench", "peers", script), *map(str, args)]

    def peer(self, script, *args):
        """The peer's JSON line, run on the kernels measured fastest for its shape (kernels());
        on a GPU, the libraries' own."""
        choice = GPU_KERNELS if "cuda" in args else self.kernels(script, args)
        r = run(self.peer_command(script, [*args, "--blas-core", choice["blas_core"],
                                           "--cpu-capability", choice["cpu_capability"]]))[-1]
        self.facts["peer"] = {"chosen": choice, "facts": r.get("kernels")}
        return r

    def kernels(self, script, args):
        """The peer's fastest OpenBLAS core type and ATen capability for this shape (its
        arguments less seed and length), measured once a bench run: PROBE_STEPS steps on
        each pair of candidates the CPU supports, then the three fastest again, alternating.
        A candidate whose first losses differ from those of the libraries' own choices
        (the reference) by more than LOSS_TOLERANCE is not taken."""
        shape = shape_of(args)
        key = (script, *map(str, shape))
        if key in self.choices:
            return self.choices[key]
        sys.path.insert(0, os.path.join(self.a.root, "bench", "peers"))
        import common  # the CPU's candidates; it does not import torch
        # A convnet's step takes a second: its probe times 5 steps past the 10 untimed.
        length = ([] if script == "torch_rbm.py" else ["--steps", 5] if script == "torch_convnet.py" else
                  ["--steps", PROBE_STEPS])

        def probe(core, capability):
            return run(self.peer_command(script, [*shape, *length, "--blas-core", core, "--cpu-capability", capability]))[-1]

        reference = probe("default", "default")
        # Batch norm at a rate of 0.1 carries rounding from step to step into the losses;
        # bfloat16 rounds every product's inputs, and each kernel differently.
        tolerance = CONVNET_LOSS_TOLERANCE if script == "torch_convnet.py" or "--bf16" in key else LOSS_TOLERANCE
        candidates = [(c, k) for c in common.blas_cores() for k in common.cpu_capabilities()] or [("default", "default")]
        timings = {c: [] for c in candidates}
        for round_candidates in (candidates, sorted(candidates, key=lambda c: timings[c])[:3]):
            for c in round_candidates:
                r = probe(*c)
                drift = max((abs(x - y) / max(1.0, abs(y)) for x, y in zip(r["losses"], reference["losses"])), default=0.0)
                timings[c].append(float("inf") if drift > tolerance else r["ms_per_step_median"])
        best = min(candidates, key=lambda c: min(timings[c]))
        if math.isinf(min(timings[best])):
            sys.exit(f"bench: no kernel of the peer {script} {' '.join(key[1:])} matches its reference losses")
        self.choices[key] = {"blas_core": best[0], "cpu_capability": best[1],
                             "probe_ms": {f"{c}/{k}": min(t) for (c, k), t in timings.items()},
                             "reference_ms": reference["ms_per_step_median"], "reference_kernels": reference["kernels"]}
        return self.choices[key]

    # --- shoal, one process -------------------------------------------------------
    def single_plan(self, model, seed, overrides=()):
        self.runs += 1
        plan = os.path.join(self.tmp, f"single-{self.runs}.json")
        sets = [x for o in ("train.batch_size=64", "cluster.nworkers_per_group=1", f"train.seed={seed}", *overrides)
                for x in ("--set", o)]
        run([self.tool("dl-plan"), self.job(model), *sets, "-o", plan])
        return plan

    def shoal_done(self, records):
        """Worker 0's done record, its kernels kept as this side's facts."""
        done = last(records, "done")
        self.facts["shoal"] = done.get("kernels")
        return done

    def shoal_single(self, model, threads, seed, overrides=()):
        r = run([self.tool("dl-worker"), "--plan", self.single_plan(model, seed, overrides), "--standalone", "--no-eval",
                 "--threads", str(threads), "--steps", str(self.a.steps), "--shards", self.shards(1)])
        return self.shoal_done(r)["ms_per_step_median"], where_the_time_goes(r, self.peak())

    def shoal_accuracy(self, model, seed, overrides=()):
        """The test accuracy after accuracy_steps(model) steps of one worker at one thread."""
        r = run([self.tool("dl-worker"), "--plan", self.single_plan(model, seed, ("train.eval_every=0", *overrides)),
                 "--standalone", "--threads", "1", "--steps", str(accuracy_steps(model)), "--shards", self.shards(1)])
        return self.shoal_done(r)["test_accuracy"]

    def peer_accuracy(self, model, seed, *bf16):
        """The peer's test accuracy after accuracy_steps(model) steps at one thread (a target it cannot reach)."""
        n = accuracy_steps(model)
        return self.peer("torch_single.py", model, "--threads", 1, *bf16, "--seed", seed, "--target-accuracy", 1.0,
                         "--eval-every", n, "--max-steps", n)["test_accuracy"]

    # --- shoal, servers and workers --------------------------------------------------
    def train_local(self, model, workers, seed, overrides, until=None):
        """Runs scripts/train-local.sh; returns worker 0's records. With `until`, stops the
        run (SIGTERM: train-local stops its processes) once a record of worker 0 satisfies it."""
        self.runs += 1
        run_dir = os.path.join(self.tmp, f"run-{self.runs}")
        env = dict(os.environ, SHOAL_BIN=self.a.bin, RUN_DIR=run_dir)
        cmd = [os.path.join(self.a.root, "scripts", "train-local.sh"), *([] if until else ["--no-eval"]),
               self.job(model), "train.batch_size=32", f"cluster.nworkers_per_group={workers}",
               f"train.seed={seed}", f"data.shards={self.shards(workers)}", *overrides]
        err = open(run_dir + ".err", "w+")
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        log = os.path.join(run_dir, "worker-0.jsonl")
        while proc.poll() is None:
            if until is not None and os.path.exists(log):
                with open(log) as f:
                    if any(until(r) for r in json_lines(f.read())):
                        # train-local stops its processes and exits 130. SIGTERM, not SIGINT: a
                        # shell that starts the bench in the background has it ignore SIGINT.
                        proc.send_signal(signal.SIGTERM)
                        proc.wait()
                        break
            time.sleep(0.2)
        err.seek(0)
        stderr = err.read()
        with open(log) as f:
            records = json_lines(f.read())
        if until is None and proc.returncode != 0:
            sys.exit(f"bench: train-local.sh exited {proc.returncode}:\n{stderr[-2000:]}")
        return records, run_dir

    def shoal_bsp(self, model, workers, overlap, seed, allreduce=False):
        """allreduce: a server in every worker's process, each owning 1/N of every parameter."""
        placement = [f"cluster.nservers_per_group={workers}", "cluster.server_worker_separate=false"] if allreduce else []
        r, run_dir = self.train_local(model, workers, seed,
                                      [f"train.steps={self.a.steps}", f"train.overlap={str(overlap).lower()}", *placement])
        return self.shoal_done(r)["ms_per_step_median"], where_the_time_goes(r, self.peak(), run_dir)

    # --- time to accuracy ------------------------------------------------------------
    def reached(self, r):
        return r.get("event") == "eval" and r["test_accuracy"] >= self.a.target_accuracy

    def seconds_to_target(self, records):
        hit = [r for r in records if self.reached(r)]
        if not hit:
            sys.exit(f"bench: shoal did not reach {self.a.target_accuracy} in {self.a.tta_max_steps} steps")
        return hit[0]["train_seconds"], {"steps": hit[0]["step"]}

    def shoal_tta_bsp(self, seed):
        # AllReduce placement: the faster one on the bsp rows (a server in each worker's process).
        records, _ = self.train_local("cnn", 2, seed, [f"train.steps={self.a.tta_max_steps}", f"train.eval_every={EVAL_EVERY}",
                                                 "cluster.nservers_per_group=2", "cluster.server_worker_separate=false"],
                                      until=self.reached)
        return self.seconds_to_target(records)

    def shoal_tta_single(self, seed):
        # dl-worker --standalone prints its records on stdout; stop it at the target as above.
        plan = self.single_plan("cnn", seed, [f"train.steps={self.a.tta_max_steps}", f"train.eval_every={EVAL_EVERY}"])
        proc = subprocess.Popen([self.tool("dl-worker"), "--plan", plan, "--standalone", "--shards", self.shards(1)],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        records = []
        for line in proc.stdout:
            records += json_lines(line)
            if records and self.reached(records[-1]):
                proc.terminate()
                break
        proc.wait()
        return self.seconds_to_target(records)

    # --- RBM by contrastive divergence --------------------------------------------
    def shoal_rbm(self, threads):
        """(ms per step, each epoch's mean training reconstruction error, test error, where the time went)."""
        self.runs += 1
        plan = os.path.join(self.tmp, f"rbm-{self.runs}.json")
        sets = [x for o in ("train.batch_size=100", "cluster.nworkers_per_group=1", f"train.epochs={self.a.rbm_epochs}",
                            "train.display_every=100") for x in ("--set", o)]
        run([self.tool("dl-plan"), os.path.join(self.a.root, "configs", "fashion-rbm1.yaml"), *sets, "-o", plan])
        r = run([self.tool("dl-worker"), "--plan", plan, "--standalone", "--threads", str(threads),
                 "--shards", self.shards(1)])
        done = self.shoal_done(r)
        per_epoch = done["steps"] // self.a.rbm_epochs  # 600: display windows of 100 steps divide it
        windows = [x for x in r if x.get("event") == "step"]
        errors = [statistics.mean(x["loss"] for x in windows if e * per_epoch < x["step"] <= (e + 1) * per_epoch)
                  for e in range(self.a.rbm_epochs)]
        return done["ms_per_step_median"], errors, done["test_loss"], where_the_time_goes(r, self.peak())

    def peer_rbm(self, threads):
        r = self.peer("torch_rbm.py", "--threads", threads, "--epochs", self.a.rbm_epochs)
        return r["ms_per_step_median"], r["epoch_errors"], r["test_error"]

    # --- char-RNN by back-propagation through time ---------------------------------
    CHAR_RNN = """model:
  layers:
    - {{name: data, type: data, shape: [51]}}
    - {{name: embed, type: embedding, srclayers: data, vocab: {v}, num_output: 64, steps: 50}}
    - {{name: gru, type: gru, srclayers: embed, num_output: 512}}
    - {{name: logits, type: fully_connected, srclayers: gru, num_output: {v}, axis: 1}}
    - {{name: loss, type: softmax_loss, srclayers: [logits, data]}}
train: {{batch_size: 32, updater: adam, learning_rate: 0.002, clip_norm: 5, display_every: 50, steps: {steps}}}
cluster: {{nworkers_per_group: 1}}
"""

    def corpus(self):
        path = os.path.join(self.a.root, "runs", "corpus", "linux.txt")
        if not os.path.exists(path):
            subprocess.run([os.path.join(self.a.root, "scripts", "linux-corpus.sh"), path], check=True,
                           stdout=subprocess.DEVNULL)
        return path

    def char_rnn_plan(self):
        shards = os.path.join(self.a.bin, "bench-shards", "linux-51")
        if not os.path.exists(os.path.join(shards, "manifest.json")):
            run([self.tool("dl-shard"), "--text", self.corpus(), "--window", "51", "--out", shards, "--shards", "1"])
        with open(os.path.join(shards, "manifest.json")) as f:
            vocabulary = json.load(f)["classes"]
        job, plan = os.path.join(self.tmp, "char-rnn.yaml"), os.path.join(self.tmp, "char-rnn.json")
        with open(job, "w") as f:
            f.write(self.CHAR_RNN.format(v=vocabulary, steps=self.a.rnn_steps))
        run([self.tool("dl-plan"), job, "-o", plan])
        return plan, shards

    def shoal_char_rnn(self, threads):
        """(ms per step, test loss, test accuracy, where the time went)."""
        plan, shards = self.char_rnn_plan()
        r = run([self.tool("dl-worker"), "--plan", plan, "--standalone", "--threads", str(threads), "--shards", shards])
        done = self.shoal_done(r)
        return done["ms_per_step_median"], done["test_loss"], done["test_accuracy"], where_the_time_goes(r, self.peak())

    def peer_char_rnn(self, threads):
        r = self.peer("torch_char_rnn.py", self.corpus(), "--threads", threads, "--steps", self.a.rnn_steps)
        return r["ms_per_step_median"], r["test_loss"], r["test_accuracy"]

    # --- convnets of configs/ on synthetic images -------------------------------------
    # (job, batch, input side): 32 trains on CIFAR-10 records, another side on numpy arrays.
    CONVNETS = (("resnet20", 128, 32), ("cifar10-singa", 100, 32), ("alexnet-67", 32, 67), ("googlenet-64", 32, 64))

    def convnet_images(self, side):
        """(the peer's data arguments, the shards) of 3 × side × side images, made once a
        bench run: synthetic CIFAR-10 batches at 32, else synthetic images as numpy arrays
        (scripts/make-image-data.py npy); a speed row times the step, not what it learns."""
        folder, shards = os.path.join(self.tmp, f"images-{side}"), os.path.join(self.tmp, f"shards-{side}")
        make = [peer_python(), os.path.join(self.a.root, "scripts", "make-image-data.py")]
        if side == 32:
            data, sharding = ["--cifar", folder], ["--cifar", folder]
        else:
            images, labels = os.path.join(folder, "images.npy"), os.path.join(folder, "labels.npy")
            data, sharding = ["--npy", images, labels], ["--npy", images, labels, "--layout", "nchw"]
        if not os.path.exists(shards):
            run(make + (["cifar", folder, "--records", "2000"] if side == 32 else
                        ["npy", folder, "--records", "512", "--test-records", "0", "--side", str(side),
                         "--layout", "nchw"]))
            run([self.tool("dl-shard"), *sharding, "--out", shards, "--shards", "1"])
        return data, shards

    def shoal_convnet(self, job, batch, side, threads, device="cpu"):
        self.runs += 1
        plan = os.path.join(self.tmp, f"convnet-{self.runs}.json")
        _, shards = self.convnet_images(side)
        # A few dozen steps are too few to judge learning by (SINGA's net starts slowly).
        # The records are the input's size: a random crop of it (ResNet-20's) takes it whole.
        crop = ["data.random_crop={size: %d, pad: 0}" % side] if job == "resnet20" else []
        sets = [x for o in (f"train.batch_size={batch}", "data.mirror=false", *crop, f"data.shards={shards}",
                            "train.divergence_check=false", f"train.device={device}") for x in ("--set", o)]
        run([self.tool("dl-plan"), os.path.join(self.a.root, "configs", f"{job}.yaml"), *sets, "-o", plan])
        r = run([self.tool("dl-worker"), "--plan", plan, "--standalone", "--no-eval", "--threads", str(threads),
                 "--steps", str(self.a.convnet_steps + 10), "--shards", shards])
        return self.shoal_done(r)["ms_per_step_median"], where_the_time_goes(r, self.peak())

    def peer_convnet(self, job, batch, side, threads, device="cpu"):
        data, _ = self.convnet_images(side)
        r = self.peer("torch_convnet.py", os.path.join(self.a.root, "configs", f"{job}.yaml"), *data,
                      "--batch", batch, "--threads", threads, "--steps", self.a.convnet_steps, "--device", device)
        return (r["ms_per_step_median"],)

    def peer_tta(self, script, seed, *args):
        r = self.peer(script, "cnn", *args, "--seed", seed, "--target-accuracy", self.a.target_accuracy,
                      "--eval-every", EVAL_EVERY, "--max-steps", self.a.tta_max_steps)
        if not r["reached"]:
            sys.exit(f"bench: the peer did not reach {self.a.target_accuracy}: {r}")
        return r["train_seconds"], {"steps": r["steps"]}


def rows(b, a):
    """(case, fields, peer, {variant: shoal}) for every row asked for; each side is a
    function of the pair's seed returning a time, ms per step or seconds to the target."""
    for model in a.models:
        if "single" in a.rows:
            for threads in (1, 2):
                yield (f"{model} single process, batch 64, {threads} thread(s)",
                       {"model": model, "threads": threads, "unit": "ms/step", "target": 0.8 if model == "mlp" else 0.85 if threads == 2 else 1.0},
                       lambda seed, m=model, t=threads: b.peer("torch_single.py", m, "--threads", t, "--seed", seed,
                                                               "--steps", a.steps)["ms_per_step_median"],
                       {"": lambda seed, m=model, t=threads: b.shoal_single(m, t, seed)})
        if "gpu" in a.rows:
            yield (f"{model} single process, batch 64, on GPU 0",
                   {"model": model, "device": "cuda:0", "unit": "ms/step", "target": 1.1},
                   lambda seed, m=model: b.peer("torch_single.py", m, "--device", "cuda", "--seed", seed,
                                                "--steps", a.steps)["ms_per_step_median"],
                   {"": lambda seed, m=model: b.shoal_single(m, 1, seed, ("train.device=cuda",))})
        if "bsp" in a.rows:
            for workers in (1, 2, 4):
                yield (f"{model} BSP {workers} worker(s) x 32",
                       {"model": model, "workers": workers, "unit": "ms/step", "target": 0.8},
                       lambda seed, m=model, w=workers: b.peer("torch_ddp.py", m, "--world", w, "--batch", 32, "--seed", seed,
                                                               "--steps", a.steps)["ms_per_step_median"],
                       {**{f", overlap {o}": lambda seed, m=model, w=workers, o=o: b.shoal_bsp(m, w, o == "on", seed)
                           for o in ("on", "off")},
                        # With one worker, AllReduce's placement is its one server in its process.
                        (", AllReduce" if workers > 1 else ", server in the worker's process"):
                            lambda seed, m=model, w=workers: b.shoal_bsp(m, w, True, seed, allreduce=True)})
        if "bf16" in a.rows:
            bf16 = ("train.compute=bf16",)
            for threads in (1, 2):
                fields = {"model": model, "threads": threads, "compute": "bf16", "unit": "ms/step", "target": 0.7}
                yield (f"{model} single process, batch 64, bf16, {threads} thread(s)", fields,
                       lambda seed, m=model, t=threads: b.peer("torch_single.py", m, "--threads", t, "--bf16", "--seed",
                                                               seed, "--steps", a.steps)["ms_per_step_median"],
                       {"": lambda seed, m=model, t=threads: b.shoal_single(m, t, seed, bf16)})
                # Its peer is shoal in float32: how much bfloat16 gains.
                yield (f"{model} bf16 over shoal's own fp32, {threads} thread(s)", dict(fields, peer_side="shoal fp32"),
                       lambda seed, m=model, t=threads: b.shoal_single(m, t, seed)[0],
                       {"": lambda seed, m=model, t=threads: b.shoal_single(m, t, seed, bf16)})
            # Each side's accuracy in bfloat16 over its own in float32, the same seed and steps.
            for side, fp32, in_bf16 in (
                    ("shoal", lambda seed, m=model: b.shoal_accuracy(m, seed),
                     lambda seed, m=model: b.shoal_accuracy(m, seed, bf16)),
                    ("pytorch", lambda seed, m=model: b.peer_accuracy(m, seed),
                     lambda seed, m=model: b.peer_accuracy(m, seed, "--bf16"))):
                yield (f"{model} {side} test accuracy after {ACCURACY_EPOCHS[model]} epoch(s), bf16 against fp32",
                       {"model": model, "unit": "accuracy", "within_points": 0.3, "pairs": ACCURACY_PAIRS[model],
                        "peer_side": f"{side} fp32"},
                       fp32, {"": in_bf16})
    if "tta" in a.rows:
        yield (f"cnn BSP 2 workers x 32, seconds to {a.target_accuracy}", {"model": "cnn", "workers": 2, "unit": "s", "target": 0.8},
               lambda seed: b.peer_tta("torch_ddp.py", seed, "--world", 2, "--batch", 32), {"": b.shoal_tta_bsp})
        yield (f"cnn single process x 64, seconds to {a.target_accuracy}", {"model": "cnn", "unit": "s", "target": 0.8},
               lambda seed: b.peer_tta("torch_single.py", seed, "--threads", 1, "--batch", 64), {"": b.shoal_tta_single})


def image_rows(b, a):
    """Sharding a JPEG folder and loading its shards for training, against PIL and
    torchvision, alternating sides at 1 and 2 threads: images a second, higher is better."""
    folder = os.path.join(b.tmp, "images")
    run(["/usr/bin/python3", os.path.join(a.root, "scripts", "make-image-data.py"), "synthetic", folder,
         "--classes", "20", "--per-class", "40", "--test-per-class", "2", "--min-side", "256", "--max-side", "400"])
    train = os.path.join(folder, "train")
    prepare = ["--resize", "256", "--center-crop", "224", "--store", "jpeg", "--quality", "90"]
    kept = os.path.join(b.tmp, "kept-jpegs")  # the originals' bytes, for the loaders
    run([b.tool("dl-shard"), "--images", train, "--out", kept, "--shards", "1", "--store", "jpeg"])

    def shoal_shard(t):
        out = os.path.join(b.tmp, f"shard-{t}")
        r = run([b.tool("dl-shard"), "--images", train, "--out", out, "--shards", "1", "--threads", str(t), *prepare])[-1]
        return r["records_per_s"]

    def pil_shard(t):
        r = run(b.peer_command("pil_shard.py", [train, "--out", os.path.join(b.tmp, f"pil-{t}"), "--threads", t,
                                                *prepare]))[-1]
        return r["records_per_s"]

    def shoal_loader(t):
        return run([b.tool("loader_speed"), kept, str(t), "64", "224", "30"])[-1]["images_per_s"]

    def torch_loader(t):
        return run(b.peer_command("torch_loader.py", [train, "--workers", t, "--batch", 64, "--batches", 30]))[-1]["images_per_s"]

    for case, shoal, peer, target in (
            ("images: shard JPEGs (resize 256, crop 224, JPEG)", shoal_shard, pil_shard, 2.0),
            ("images: load for training (crop 224, flip, normalise)", shoal_loader, torch_loader, 1.5)):
        for t in (1, 2):
            pairs = []
            while not enough(a, [[x["ratio"] for x in pairs]]):
                pairs.append(pair(shoal(t), peer(t)))
            yield summarise(f"{case}, {t} thread(s)", {"threads": t, "unit": "img/s", "target": target,
                                                       "higher_is_better": True}, pairs)


def png_rows(b, a):
    """Fashion-MNIST's 60,000 training PNGs sharded raw, against PIL, alternating sides at 1
    and 2 threads: images a second, higher is better; each pair keeps both sides' peak
    resident memory (KiB) and bytes written."""
    folder = os.path.join(b.tmp, "fashion-png")
    run(["/usr/bin/python3", os.path.join(a.root, "scripts", "make-image-data.py"), "fashion-png", folder])
    train = os.path.join(folder, "train")

    def side(cmd):
        records, peak_kb = run_peak(cmd)
        r = records[-1]
        return r["records_per_s"], r["bytes"], max(peak_kb, r.get("peak_rss_kb", 0))

    for t in (1, 2):
        pairs = []
        while not enough(a, [[x["ratio"] for x in pairs]]):
            i = len(pairs)
            shoal = side([b.tool("dl-shard"), "--images", train, "--out", os.path.join(b.tmp, f"png-{t}-{i}"),
                          "--shards", "1", "--threads", str(t), "--store", "raw"])
            peer = side(b.peer_command("pil_shard.py", [train, "--out", os.path.join(b.tmp, f"pil-png-{t}-{i}"),
                                                        "--threads", t, "--store", "raw"]))
            pairs.append(pair(shoal[0], peer[0], bytes=[shoal[1], peer[1]], peak_rss_kb=[shoal[2], peer[2]]))
        yield summarise(f"images: shard 60,000 PNGs (raw), {t} thread(s)",
                        {"threads": t, "unit": "img/s", "target": 2.0, "higher_is_better": True}, pairs)


def exchange_rows(a):
    """A 4 MB and a 64 MB tensor's update-get round trip through a parameter server
    against a raw NNG echo of the same bytes (bench/exchange_throughput.cpp, which
    alternates the two itself): ratio of throughputs, higher is better."""
    for floats, rounds in ((1 << 20, 40), (1 << 24, 6)):
        r = run([os.path.join(a.bin, "exchange_throughput"), str(floats), str(rounds), str(max(a.repeats, 3))])[-1]
        yield {"case": f"exchange {r['message_mb']:.0f} MB update-get vs raw NNG echo", "unit": "GB/s",
               "target": 0.8, "higher_is_better": True, "ratio": r["ratio"], "ratio_min": min(r["ratios"]),
               "ratio_max": max(r["ratios"]), "shoal": r["shoal_gb_per_s"], "peer": r["raw_nng_gb_per_s"],
               "pairs": [{"ratio": x} for x in r["ratios"]]}


WIDE = 0.10


def accuracy_steps(model):
    return ACCURACY_EPOCHS[model] * STEPS_PER_EPOCH


def enough(a, ratios, pairs=None):
    """Whether the pairs measured so far are enough for their row(s), each given by its
    pair ratios: the row's own count of `pairs` where it has one, else --repeats of them,
    and --wide-repeats where any row's ratios stray more than WIDE from their median (a
    noisy row gets more pairs, not a luckier median)."""
    done = len(ratios[0])
    if pairs is not None:
        return done >= pairs
    if done < a.repeats:
        return False
    if done >= a.wide_repeats:
        return True
    return not any(min(r) < (1 - WIDE) * statistics.median(r) or max(r) > (1 + WIDE) * statistics.median(r)
                   for r in ratios)


def pair(shoal, peer, **extra):
    return dict(extra, shoal=shoal, peer=peer, ratio=shoal / peer)


def alternated(b, a, shoal, peer):
    """{threads: ([(shoal's result, peer's result)] x pairs, both sides' kernels)} at 1
    and 2 threads, the sides run alternately; a result is a tuple whose first item is ms
    per step."""
    runs = {}
    for t in (1, 2):
        pairs = []
        while not enough(a, [[s[0] / p[0] for s, p in pairs]]):
            pairs.append((shoal(t), peer(t)))
        runs[t] = (pairs, dict(b.facts))
    return runs


def speed_rows(runs, case, model, details=False):
    """A ms/step row for each thread count of alternated()'s runs; with `details`, the
    last item of shoal's result says where the median run's time went."""
    for threads, (pairs, facts) in runs.items():
        row = summarise(f"{case}, {threads} thread(s)", {"model": model, "threads": threads, "unit": "ms/step",
                                                         "target": 1.0}, [pair(s[0], p[0]) for s, p in pairs], facts)
        if details:
            row["details"] = sorted((s for s, _ in pairs), key=lambda s: s[0])[len(pairs) // 2][-1]
        yield row


def rbm_rows(b, a):
    """The RBM's speed rows, and its reconstruction errors over every run."""
    runs = alternated(b, a, b.shoal_rbm, b.peer_rbm)  # (ms, epoch errors, test error, where the time went)
    yield from speed_rows(runs, "rbm 784-1000 CD-1 single process, batch 100", "rbm", details=True)
    every = [run for pairs, _ in runs.values() for run in pairs]
    for e in range(a.rbm_epochs):
        yield summarise(f"rbm reconstruction error, epoch {e + 1} (train)",
                        {"model": "rbm", "unit": "error", "within": 0.05}, [pair(s[1][e], p[1][e]) for s, p in every])
    yield summarise(f"rbm test reconstruction error after {a.rbm_epochs} epoch(s)",
                    {"model": "rbm", "unit": "error", "within": 0.05}, [pair(s[2], p[2]) for s, p in every])


def char_rnn_rows(b, a):
    """The char-RNN's speed rows, and its test loss over every run."""
    runs = alternated(b, a, b.shoal_char_rnn, b.peer_char_rnn)  # (ms, test loss, test accuracy, where the time went)
    yield from speed_rows(runs, "char-rnn GRU 512, unroll 50, batch 32", "char-rnn", details=True)
    yield summarise(f"char-rnn test loss after {a.rnn_steps} steps", {"model": "char-rnn", "unit": "nats", "within": 0.05},
                    [pair(s[1], p[1], shoal_accuracy=s[2], peer_accuracy=p[2])
                     for pairs, _ in runs.values() for s, p in pairs])


def convnet_rows(b, a):
    """Each convnet's speed rows, at 1 and 2 threads."""
    for job, batch, side in (c for c in b.CONVNETS if c[0] in a.convnets):
        runs = alternated(b, a, lambda t, j=job, n=batch, s=side: b.shoal_convnet(j, n, s, t),
                          lambda t, j=job, n=batch, s=side: b.peer_convnet(j, n, s, t))
        yield from speed_rows(runs, f"{job} single process, batch {batch}", job, details=True)


def gpu_convnet_rows(b, a):
    """Each convnet on GPU 0, one process: its step against PyTorch's on CUDA."""
    for job, batch, side in (c for c in b.CONVNETS if c[0] in a.convnets):
        yield (f"{job} single process, batch {batch}, on GPU 0",
               {"model": job, "device": "cuda:0", "unit": "ms/step", "target": 1.0},
               lambda seed, j=job, n=batch, s=side: b.peer_convnet(j, n, s, 1, "cuda")[0],
               {"": lambda seed, j=job, n=batch, s=side: b.shoal_convnet(j, n, s, 1, "cuda")})


def spread(values):
    """A side's own range over the pairs, each end over its median: a bimodal side shows here."""
    middle = statistics.median(values)
    return [min(values) / middle, max(values) / middle] if middle else None


def summarise(case, fields, pairs, facts=None):
    """A row: the median of its pairs' ratios and their range, each side's median and
    spread, and (facts) what each side computed with."""
    ratios = [x["ratio"] for x in pairs]
    shoal, peer = [x["shoal"] for x in pairs], [x["peer"] for x in pairs]
    row = dict(fields, case=case, ratio=statistics.median(ratios), ratio_min=min(ratios), ratio_max=max(ratios),
               shoal=statistics.median(shoal), peer=statistics.median(peer), shoal_spread=spread(shoal),
               peer_spread=spread(peer), **({"kernels": dict(facts)} if facts else {}), pairs=pairs)
    if "within_points" in fields:  # an accuracy row: the mean difference in points, and its standard error
        differences = [100 * (s - p) for s, p in zip(shoal, peer)]
        row.update(difference_points=statistics.mean(differences), difference_points_min=min(differences),
                   difference_points_max=max(differences))
        if len(differences) > 1:
            row["difference_points_se"] = statistics.stdev(differences) / math.sqrt(len(differences))
    return row


def figure_and_details(side):
    """A side gives its figure, or its figure and details: where the time went, or the steps it took."""
    return side if isinstance(side, tuple) else (side, None)


def measure(b, a, case, fields, peer, variants):
    """Alternates the sides until enough() pairs: each shoal variant, then the peer, ...
    Pair i runs both sides with seed i (initial parameters and data order): a
    time-to-accuracy row's median is then over draws, not over one draw's timing."""
    pairs = {v: [] for v in variants}
    seed = 0
    while not enough(a, [[x["ratio"] for x in ps] for ps in pairs.values()], fields.get("pairs")):
        seed += 1
        shoal = {v: fn(seed) for v, fn in list(variants.items())[:1]}
        p = peer(seed)
        shoal.update({v: fn(seed) for v, fn in list(variants.items())[1:]})
        p, peer_details = figure_and_details(p)
        for v, s in shoal.items():
            s, details = figure_and_details(s)
            pairs[v].append(pair(s, p, seed=seed, shoal_details=details, peer_details=peer_details))
    for v, ps in pairs.items():
        middle = sorted(ps, key=lambda x: x["shoal"])[len(ps) // 2]
        yield dict(summarise(case + v, fields, ps, b.facts), details=middle["shoal_details"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--rows", default="single,bsp,tta,bf16,rbm,char-rnn,convnets,images,exchange",
                    type=lambda s: s.split(","))
    ap.add_argument("--models", default="mlp,cnn", type=lambda s: s.split(","))
    ap.add_argument("--repeats", type=int, default=3, help="shoal/peer pairs per row (at least 3 for a range)")
    ap.add_argument("--wide-repeats", type=int, default=5,
                    help="pairs of a row whose pair ratios stray more than 10%% from their median")
    ap.add_argument("--steps", type=int, default=200, help="timed steps of a ms/step row")
    ap.add_argument("--target-accuracy", type=float, default=0.88, help="of the time-to-accuracy rows")
    ap.add_argument("--rnn-steps", type=int, default=200, help="steps of the char-RNN rows")
    ap.add_argument("--rbm-epochs", type=int, default=1, help="epochs of the RBM rows")
    ap.add_argument("--convnet-steps", type=int, default=30, help="timed steps of the convnet rows")
    ap.add_argument("--convnets", default="resnet20,cifar10-singa,alexnet-67,googlenet-64", type=lambda s: s.split(","),
                    help="the configs/ jobs of the convnet rows")
    ap.add_argument("--tta-max-steps", type=int, default=4000, help="steps a time-to-accuracy run may take")
    a = ap.parse_args()
    if a.repeats < 1:
        ap.error(f"--repeats must be at least 1, not {a.repeats}")
    commit = subprocess.run(["git", "-C", a.root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    result = {"commit": commit, "steps": a.steps, "repeats": a.repeats, "cpu": cpu_model(), "host_cpus": os.cpu_count(),
              "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": []}
    print(f"{'case':52} {'shoal':>9} {'peer':>9} {'unit':>7} {'ratio':>6} {'range':>11} {'target':>6}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        b = Bench(a, tmp)
        measured = (r for row in itertools.chain(rows(b, a), gpu_convnet_rows(b, a) if "gpu-convnets" in a.rows else ())
                    for r in measure(b, a, *row))
        for r in itertools.chain(measured, rbm_rows(b, a) if "rbm" in a.rows else (),
                                 char_rnn_rows(b, a) if "char-rnn" in a.rows else (),
                                 convnet_rows(b, a) if "convnets" in a.rows else (),
                                 image_rows(b, a) if "images" in a.rows else (),
                                 png_rows(b, a) if "png" in a.rows else (),
                                 exchange_rows(a) if "exchange" in a.rows else ()):
            result["rows"].append(r)
            print(f"{r['case']:52} {r['shoal']:9.2f} {r['peer']:9.2f} {r['unit']:>7} {r['ratio']:6.2f} "
                  f"{r['ratio_min']:5.2f}-{r['ratio_max']:<5.2f} {bound_text(r):>6}", flush=True)
            if "difference_points" in r:
                print(f"  {difference_text(r)} (the mean of {len(r['pairs'])} seeds' differences, ± its standard error)",
                      flush=True)
            if r.get("details"):  # the median shoal run's
                print(details_line(r), flush=True)
            if r.get("kernels"):
                print(kernels_line(r["kernels"]), flush=True)
            with open(a.out, "w") as f:           # as it goes: an interrupted bench keeps its rows
                json.dump(result, f, indent=2)
    print(f"written to {a.out}")


if __name__ == "__main__":
    main()
