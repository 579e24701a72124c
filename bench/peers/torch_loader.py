#!/usr/bin/python3
"""PyTorch's data loader on a folder of JPEGs: the images a second it delivers, a
reference for a loader's throughput.

  torch_loader.py DIR [--workers N] [--batch 64] [--size 224] [--batches 50] [--seed 1]

DIR is an image folder (DIR/<class>/*.jpg), read by torchvision's ImageFolder with the
usual ImageNet training transform: RandomResizedCrop(size), RandomHorizontalFlip,
ToTensor, Normalize with ImageNet's mean and standard deviation. A DataLoader shuffles
it into batches of B (the last, partial one dropped), in N worker processes
(num_workers = N, so N = 1 is one worker besides this process, never decoding in this
process), kept across epochs, each holding 2 batches ahead.

Each worker is one thread: OMP_NUM_THREADS is 1 before torch is imported, and the
worker sets torch's threads to 1 and pins itself to one core, worker i to the (i mod
n)-th of the n cores this process may run on. After 5 warm-up batches, --batches
batches are timed, starting new epochs as needed. Prints one JSON line."""
import argparse
import json
import os
import sys
import time

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"
import torch  # noqa: E402
import torchvision.datasets as datasets  # noqa: E402
import torchvision.transforms as T  # noqa: E402

WARMUP = 5  # batches before the timed ones: the workers start, the files' pages are read
CORES = sorted(os.sched_getaffinity(0))


def one_thread_on_a_core(worker_id):
    torch.set_num_threads(1)
    os.sched_setaffinity(0, {CORES[worker_id % len(CORES)]})


def batches(loader):
    """The loader's batches, epoch after epoch."""
    while True:
        yield from loader


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", help="an image folder: DIR/<class>/*.jpg")
    ap.add_argument("--workers", type=int, default=1, help="decoding processes")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--size", type=int, default=224, help="side of the crops")
    ap.add_argument("--batches", type=int, default=50, help="timed batches")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.workers < 1 or a.batch < 1 or a.size < 1 or a.batches < 1:
        sys.exit("torch_loader: --workers, --batch, --size and --batches must be at least 1")

    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    transform = T.Compose([T.RandomResizedCrop(a.size), T.RandomHorizontalFlip(), T.ToTensor(),
                           T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])])
    dataset = datasets.ImageFolder(a.dir, transform=transform)
    if len(dataset) < a.batch:
        sys.exit(f"torch_loader: {a.dir} has {len(dataset)} images, fewer than a batch of {a.batch}")
    loader = torch.utils.data.DataLoader(dataset, batch_size=a.batch, shuffle=True, num_workers=a.workers,
                                         persistent_workers=True, prefetch_factor=2, drop_last=True,
                                         worker_init_fn=one_thread_on_a_core)
    it = batches(loader)
    for _ in range(WARMUP):
        next(it)
    start = time.perf_counter()
    for _ in range(a.batches):
        images, _labels = next(it)
    seconds = time.perf_counter() - start
    assert images.shape == (a.batch, 3, a.size, a.size), images.shape
    print(json.dumps({"images_per_s": round(a.batches * a.batch / seconds, 1), "workers": a.workers, "batch": a.batch,
                      "size": a.size, "batches": a.batches, "seconds": round(seconds, 4), "images": len(dataset),
                      "cores": len(CORES), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
