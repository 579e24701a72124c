"""What the PyTorch peers share: thread pinning, the data, the two models, evaluation.

Import this module before torch is imported anywhere else: pin_threads must set the
thread pools' environment before torch loads, because torch.set_num_threads does not
reach the OpenBLAS that Debian's torch uses for its matrix products (without it a
"1 thread" peer takes every core); it also gives that OpenBLAS the kernels of the CPU's
vector instructions (openblas_core)."""
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
    return ap


def openblas_core():
    """The OpenBLAS kernels for this CPU's widest vector instructions. OpenBLAS 0.3.21
    picks its kernels by the CPU's model number, and on one it does not know (a cloud
    VM's "Intel Xeon Processor") falls back to its SSE3 ones, 4-5x slower than its
    AVX-512 ones there: the peer would be measured against that, not against torch."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    except OSError:
        return None
    if "avx512f" in flags and "avx512bw" in flags:
        return "SkylakeX"
    if "avx2" in flags and "fma" in flags:
        return "Haswell"
    return None


def pin_threads(n):
    if "torch" in sys.modules:
        raise RuntimeError("pin_threads must run before torch is imported")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    core = openblas_core()
    if core and "OPENBLAS_CORETYPE" not in os.environ:  # one the user set stays
        os.environ["OPENBLAS_CORETYPE"] = core
    import numpy  # noqa: F401  (before torch, as the peers always did: it measured faster)
    import torch
    torch.set_num_threads(n)


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


def accuracy(net, x, y, batch=1000):
    import torch
    with torch.no_grad():
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


def train(net, x, y, batch, steps, lr=0.05, seed=0, eval_every=0, on_eval=None):
    """SGD with momentum 0.9 (the configs' updater) for `steps` steps of `batch` records.
    Returns each step's seconds. With eval_every, calls on_eval(step) after every
    eval_every-th step, outside the timed steps; training stops when it returns True."""
    import time, torch
    import torch.nn.functional as F
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
    seconds = []
    for step, (xb, yb) in zip(range(steps), epochs(x, y, batch, seed)):
        t = time.perf_counter()
        opt.zero_grad()
        F.cross_entropy(net(xb), yb).backward()
        opt.step()
        if xb.is_cuda:
            torch.cuda.synchronize()  # a step is done when the GPU is
        seconds.append(time.perf_counter() - t)
        if eval_every and (step + 1) % eval_every == 0 and on_eval(step + 1):
            break
    return seconds


def median_ms(seconds, skip=10):
    """The median step in ms, past the first `skip` steps (allocation, caches)."""
    import statistics
    return 1000 * statistics.median(seconds[skip:] if len(seconds) > skip else seconds)
