"""What the PyTorch peers share: the environment they run best in, the data, the two
models, training and evaluation.

Import this module before torch is imported anywhere else: at_its_best must set the
allocator, the thread pools and the kernels before torch loads. Every peer prints one
JSON line holding "kernels" (what it computed with) and "losses" (its first steps'
training losses, which the bench compares across kernels)."""
import gzip, os, sys

DATA = os.environ.get("SHOAL_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")


def arguments(batch):
    """The options both peers take; each adds its own (threads, world)."""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["mlp", "cnn"])
    ap.add_argument("--batch", type=int, default=batch, help="records per step (per process under DDP)")
    ap.add_argument("--steps", type=int, default=200, help="timed steps")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--target-accuracy", type=float, default=0, help="train until this test accuracy instead")
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--max-steps", type=int, default=5000)
    kernel_arguments(ap)
    return ap


# glibc's allocator maps a large block afresh and unmaps it when freed, and moves that
# threshold as a process runs: a step that allocates tens of megabytes then pays a page
# fault for every page of them, in some runs and not in others. Keeping the blocks is what
# shoal's KeepLargeAllocations does for its own processes. The heap also asks for
# transparent huge pages (glibc 2.35 and later; older ones ignore the name), as shoal's
# tensors do (madvise): a step's activations on small pages thrash the TLB, more in some
# processes than in others, which made the peer's step bimodal.
ALLOCATOR = "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=1073741824:glibc.malloc.hugetlb=1"


def cpu_field(name):
    """A field of /proc/cpuinfo's first processor ("" where there is none)."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((l.split(":", 1)[1].strip() for l in f if l.split(":", 1)[0].strip() == name), "")
    except OSError:
        return ""


def cpu_flags():
    return set(cpu_field("flags").split())


def blas_cores():
    """The OpenBLAS core types this CPU can run, widest vector instructions first: the
    candidates the bench measures for each row (a kernel that wins one shape can lose
    another). OpenBLAS 0.3.21 picks its kernels by the CPU's model number, and on one it
    does not know falls back to SSE3 ones; an environment may also name narrower ones."""
    flags, cores = cpu_flags(), []
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        cores.append("SkylakeX")
        if "avx512_bf16" in flags:
            cores.append("Cooperlake")
    if {"avx2", "fma"} <= flags:
        cores.append("Haswell")
        if cpu_field("vendor_id") == "AuthenticAMD":
            cores.append("Zen")
    if not cores and "avx" in flags:
        cores.append("Sandybridge")
    return cores


def cpu_capabilities():
    """The ATen kernel sets (ATEN_CPU_CAPABILITY) this CPU can run, widest first. Debian's
    torch 1.13 has AVX-512 kernels but dispatches to its AVX2 ones unless told."""
    flags, caps = cpu_flags(), []
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        caps.append("avx512")
    if "avx2" in flags:
        caps.append("avx2")
    return caps or ["default"]


def keep_large_blocks():
    """Starts this process again with ALLOCATOR in its environment, unless it has it."""
    if ALLOCATOR not in os.environ.get("GLIBC_TUNABLES", ""):
        tunables = ":".join(x for x in (os.environ.get("GLIBC_TUNABLES"), ALLOCATOR) if x)
        os.execve(sys.executable, [sys.executable, *sys.argv], dict(os.environ, GLIBC_TUNABLES=tunables))


def at_its_best(threads, blas_core=None, cpu_capability=None, core=None):
    """Sets up this process for the peer's fastest run; call it before torch is imported.
    - The allocator keeps large blocks on huge pages (ALLOCATOR): glibc reads that at start, so the
      process starts itself again once with it in its environment.
    - Every thread pool takes `threads`: torch.set_num_threads does not reach the OpenBLAS
      that Debian's torch uses for its matrix products (without it a "1 thread" peer
      takes every core).
    - OpenBLAS's kernels are `blas_core` (default: the widest the CPU has) and ATen's
      `cpu_capability` (likewise), overriding what the environment set; "default" leaves
      each to its own detection.
    - Threads are bound: OpenMP's to their cores, or the whole process to `core` (a DDP
      rank, one of several processes of one thread)."""
    if "torch" in sys.modules:
        raise RuntimeError("at_its_best must run before torch is imported")
    keep_large_blocks()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    blas_core = blas_core or next(iter(blas_cores()), "default")
    cpu_capability = cpu_capability or cpu_capabilities()[0]
    for var, value in (("OPENBLAS_CORETYPE", blas_core), ("ATEN_CPU_CAPABILITY", cpu_capability)):
        if value == "default":
            os.environ.pop(var, None)
        else:
            os.environ[var] = value
    if core is not None:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[core % len(os.sched_getaffinity(0))]})
    else:
        os.environ["OMP_PROC_BIND"] = "true"
    import numpy  # noqa: F401  (before torch, as the peers always did: it measured faster)
    import torch
    torch.set_num_threads(threads)


def kernel_arguments(ap):
    """The options that choose the peer's kernels (the bench measures which is fastest)."""
    ap.add_argument("--blas-core", help="OPENBLAS_CORETYPE (default: the widest this CPU has; 'default': OpenBLAS's own)")
    ap.add_argument("--cpu-capability", help="ATEN_CPU_CAPABILITY (default: the widest; 'default': torch's own)")


def kernels():
    """What this process computes with, as its JSON line reports it: OpenBLAS's kernels
    and threads (asked of the library torch loaded), torch's dispatch, build and pools,
    the allocator's settings and the cores the process may run on."""
    import ctypes, re, torch
    facts = {"torch": torch.__version__}
    try:
        blas = ctypes.CDLL("libopenblas.so.0", mode=os.RTLD_NOLOAD)
        blas.openblas_get_corename.restype = ctypes.c_char_p
        facts.update(openblas_core=blas.openblas_get_corename().decode(), openblas_threads=blas.openblas_get_num_threads())
    except (OSError, AttributeError):
        facts["openblas_core"] = None
    config = torch.__config__.show()
    for key, pattern in (("cpu_capability", r"CPU capability usage: (\S+)"), ("onednn", r"MKL-DNN (v[\d.]+)"),
                         ("openmp", r"OpenMP (\d+)")):
        found = re.search(pattern, config)
        facts[key] = found.group(1) if found else None
    facts.update(intra_op_threads=torch.get_num_threads(), inter_op_threads=torch.get_num_interop_threads(),
                 environment={k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "ATEN_CPU_CAPABILITY", "OMP_NUM_THREADS",
                                                            "OMP_PROC_BIND", "GLIBC_TUNABLES")},
                 cores=sorted(os.sched_getaffinity(0)))
    return facts


def idx(name):
    """An idx file of the Fashion-MNIST package (dataset-fashion-mnist) as a numpy array."""
    import numpy as np
    with gzip.open(os.path.join(DATA, name)) as f:
        b = f.read()
    rank = b[3]
    dims = [int.from_bytes(b[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(b, np.uint8, offset=4 + 4 * rank).reshape(dims)


def dataset(split):
    """(images as float32 N×1×28×28 in [0, 1], labels) as shoal's dl-shard scales them."""
    import torch
    prefix = "train" if split == "train" else "t10k"
    x = torch.tensor(idx(f"{prefix}-images-idx3-ubyte.gz"), dtype=torch.float32).unsqueeze(1) / 255.0
    y = torch.tensor(idx(f"{prefix}-labels-idx1-ubyte.gz"), dtype=torch.long)
    return x, y


def model(kind):
    """configs/fashion-mlp.yaml and configs/fashion-cnn.yaml, with PyTorch's default
    initialisation (uniform in ±1/sqrt(fan_in)), which is shoal's too."""
    import torch.nn as nn
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                             nn.Linear(128, 10))
    if kind == "cnn":
        return nn.Sequential(nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(64 * 7 * 7, 256), nn.ReLU(), nn.Linear(256, 10))
    raise ValueError(f"unknown model {kind!r} (mlp or cnn)")


def autocast(bf16):
    """bfloat16 autocast on the CPU (products and convolutions in bfloat16) where asked."""
    import contextlib, torch
    return torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()


def accuracy(net, x, y, batch=1000, bf16=False):
    import torch
    with torch.no_grad(), autocast(bf16):
        right = sum((net(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item() for i in range(0, len(x), batch))
    return right / len(x)


def epochs(x, y, batch, seed):
    """Batches of (images, labels), each epoch in a fresh order (as shoal's workers
    take them): the records are permuted once an epoch and sliced, so a step reads
    contiguous memory."""
    import torch
    g = torch.Generator().manual_seed(seed)
    while True:
        order = torch.randperm(len(x), generator=g)
        xs, ys = x[order], y[order]
        for i in range(0, len(x) - batch + 1, batch):
            yield xs[i:i + batch], ys[i:i + batch]


def train(net, x, y, batch, steps, lr=0.05, seed=0, eval_every=0, on_eval=None, losses=None, bf16=False):
    """SGD with momentum 0.9 (the configs' updater) for `steps` steps of `batch` records,
    the forward pass under bfloat16 autocast with bf16. Returns each step's seconds;
    appends the first LOSSES steps' losses to `losses`. With eval_every, calls
    on_eval(step) after every eval_every-th step, outside the timed steps; training stops
    when it returns True."""
    import time, torch
    import torch.nn.functional as F
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
    seconds = []
    for step, (xb, yb) in zip(range(steps), epochs(x, y, batch, seed)):
        t = time.perf_counter()
        opt.zero_grad()
        with autocast(bf16):
            loss = F.cross_entropy(net(xb), yb)
        loss.backward()
        opt.step()
        if xb.is_cuda:
            torch.cuda.synchronize()  # a step is done when the GPU is
        seconds.append(time.perf_counter() - t)
        if losses is not None and step < LOSSES:
            losses.append(loss.item())
        if eval_every and (step + 1) % eval_every == 0 and on_eval(step + 1):
            break
    return seconds


LOSSES = 5  # steps whose losses a peer reports


def median_ms(seconds, skip=10):
    """The median step in ms, past the first `skip` steps (allocation, caches)."""
    import statistics
    return 1000 * statistics.median(seconds[skip:] if len(seconds) > skip else seconds)
