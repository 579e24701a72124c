#!/usr/bin/python3
"""PyTorch peer for a shoal job's convnet (configs/resnet20.yaml, cifar10-singa.yaml,
alexnet-67.yaml, googlenet-64.yaml): the net bench/peers/shoal_net.py builds from the
job, trained in one process on the CIFAR-10 binary files of DIR (data_batch_*.bin, as
scripts/make-image-data.py cifar writes them) or on uint8 images [N, C, H, W] and their
labels as numpy arrays (make-image-data.py npy), pixels / 255 normalised per channel,
with the job's updater settings (SGD, momentum, weight decay). No augmentation: both
sides time the step alone.

  torch_convnet.py JOB.yaml (--cifar DIR | --npy IMAGES LABELS) [--threads N] [--batch B]
                   [--steps S] [--device cuda] [--blas-core CORE] [--cpu-capability CAP]

Prints one JSON line: ms per training step (median past the first 10 steps)."""
import argparse, json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common

ap = argparse.ArgumentParser()
ap.add_argument("job")
data = ap.add_mutually_exclusive_group(required=True)
data.add_argument("--cifar", help="CIFAR-10 binary batches' folder")
data.add_argument("--npy", nargs=2, metavar=("IMAGES", "LABELS"), help="uint8 images [N, C, H, W] and labels")
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--batch", type=int, default=128)
ap.add_argument("--steps", type=int, default=50)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--device", default="cpu", help="cpu, or cuda: the net and the images on GPU 0")
common.kernel_arguments(ap)
a = ap.parse_args()
common.at_its_best(a.threads, a.blas_core, a.cpu_capability)
import glob, time

import numpy
import torch
import torch.nn.functional as F
import yaml

import shoal_net

torch.manual_seed(a.seed)
if a.cifar:
    raw = numpy.concatenate([numpy.fromfile(f, numpy.uint8).reshape(-1, 3073)
                             for f in sorted(glob.glob(os.path.join(a.cifar, "data_batch_*.bin")))])
    pixels, labels = raw[:, 1:].reshape(-1, 3, 32, 32), raw[:, 0]
else:
    pixels, labels = numpy.load(a.npy[0]), numpy.load(a.npy[1])
x = torch.tensor(pixels.astype(numpy.float32) / 255.0)
x = (x - x.mean((0, 2, 3), keepdim=True)) / x.std((0, 2, 3), keepdim=True)
y = torch.tensor(labels.astype(numpy.int64))
with open(a.job) as f:
    job = yaml.safe_load(f)
train = job.get("train", {})
net = shoal_net.ShoalNet(job["model"]["layers"])
if a.device != "cpu":
    x, y, net = x.to(a.device), y.to(a.device), net.to(a.device)
net.train()
opt = torch.optim.SGD(net.parameters(), lr=train.get("learning_rate", 0.05), momentum=train.get("momentum", 0.9),
                      weight_decay=train.get("weight_decay", 0.0))
seconds, losses = [], []
for step, (xb, yb) in zip(range(a.steps + 10), common.epochs(x, y, a.batch, a.seed)):
    t = time.perf_counter()
    opt.zero_grad()
    loss = F.cross_entropy(net(xb), yb)
    loss.backward()
    opt.step()
    if a.device != "cpu":
        torch.cuda.synchronize()  # a step is done when the GPU is
    seconds.append(time.perf_counter() - t)
    if step < common.LOSSES:
        losses.append(loss.item())
print(json.dumps({"peer": "pytorch-" + torch.__version__, "job": os.path.basename(a.job), "threads": a.threads,
                  "device": a.device, "batch": a.batch, "ms_per_step_median": common.median_ms(seconds), "losses": losses,
                  "kernels": common.kernels()}))
