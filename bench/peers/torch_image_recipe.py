#!/usr/bin/python3
"""PyTorch reference for an image experiment (experiments/convnets): the net of a shoal
plan's job (bench/peers/shoal_net.py) trained in one process with the recipe of the job's
train and data sections, done as torchvision does it, on the image folders the shards
were dealt from. It writes a run directory that dl-report reads beside shoal's runs.

  torch_image_recipe.py PLAN.json --train DIR --test DIR --manifest SHARDS/manifest.json
                        --out RUN_DIR [--threads N] [--loader-workers K]

The recipe, from the plan's job:
- data: RandomCrop(random_crop.size, padding=random_crop.pad), RandomHorizontalFlip
  (mirror), CenterCrop(center_crop) for evaluation (which pads a smaller image with
  zeros), ToTensor, Normalize with the manifest's per-channel mean and std; images in
  the manifest's channels (gray repeated as RGB, as dl-shard --channels 3 does);
- train: SGD with the job's learning_rate, momentum and weight_decay, its cosine or
  constant lr_schedule stepped once a step, batch_size records a step, and shoal's
  number of steps (epochs x training records / batch_size, rounded down);
- evaluation every eval_every steps (-1: a fifth of the run, at least 100 steps apart)
  and at the end, on the whole test folder.

RUN_DIR gets run.json and worker-0.jsonl as scripts/train-local.sh writes them: step
records every display_every steps (the loss averaged over them), evaluation records
and a done record, each with train_seconds, the training time without evaluations."""
import argparse, json, math, os, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common

ap = argparse.ArgumentParser()
ap.add_argument("plan")
ap.add_argument("--train", required=True, help="the training images' folder (class folders)")
ap.add_argument("--test", required=True, help="the test images' folder")
ap.add_argument("--manifest", required=True, help="the shards' manifest.json: record shape, mean and std")
ap.add_argument("--out", required=True, help="the run directory to write")
ap.add_argument("--threads", type=int, default=os.cpu_count())
ap.add_argument("--loader-workers", type=int, default=1, help="DataLoader processes (0: load in the training loop)")
ap.add_argument("--seed", type=int, default=1)
common.kernel_arguments(ap)
a = ap.parse_args()
common.at_its_best(a.threads, a.blas_core, a.cpu_capability)
from datetime import datetime, timezone

import torch
import torch.nn.functional as F
import torchvision
import torchvision.transforms as T

import shoal_net


def now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def unpin(_):
    """A loader process computes beside the training threads, not on one of their cores."""
    os.sched_setaffinity(0, range(os.cpu_count()))
    torch.set_num_threads(1)


with open(a.plan) as f:
    job = json.load(f)["job"]
with open(a.manifest) as f:
    manifest = json.load(f)
train, data = job.get("train", {}), job.get("data", {})
channels = manifest["record_shape"][0]
# ImageFolder reads every image as RGB (gray repeated, as dl-shard --channels 3 does).
common_steps = [T.Grayscale(1)] if channels == 1 else []
finish = [T.ToTensor()]
if data.get("normalize"):
    norm = data["normalize"]
    mean, std = (norm["mean"], norm["std"]) if isinstance(norm, dict) else (manifest["mean"], manifest["std"])
    finish.append(T.Normalize(mean, std))
crop = data.get("random_crop")
train_steps = list(common_steps)
if crop:
    train_steps.append(T.RandomCrop(crop["size"], padding=crop.get("pad", 0)))
if data.get("mirror"):
    train_steps.append(T.RandomHorizontalFlip())
eval_steps = list(common_steps)
if data.get("resize"):
    eval_steps.append(T.Resize(data["resize"], antialias=True))
if data.get("center_crop"):
    eval_steps.append(T.CenterCrop(data["center_crop"]))
train_set = torchvision.datasets.ImageFolder(a.train, T.Compose(train_steps + finish))
test_set = torchvision.datasets.ImageFolder(a.test, T.Compose(eval_steps + finish))

batch = train.get("batch_size", 32)
steps = train.get("steps") or int(train.get("epochs", 1) * len(train_set) / batch)
eval_every = train.get("eval_every", -1)
if eval_every == -1:
    eval_every = max(100, steps // 5)
display_every = train.get("display_every", 100) or 100

torch.manual_seed(a.seed)
net = shoal_net.ShoalNet(job["model"]["layers"])
opt = torch.optim.SGD(net.parameters(), lr=train.get("learning_rate", 0.05), momentum=train.get("momentum", 0.0),
                      weight_decay=train.get("weight_decay", 0.0))
schedule = train.get("lr_schedule", {"kind": "constant"})
if schedule.get("kind") == "cosine":
    every = schedule["every"]
    rate = lambda t: (1 + math.cos(math.pi * min(t, every) / every)) / 2
elif schedule.get("kind", "constant") == "constant":
    rate = lambda t: 1.0
else:
    sys.exit(f"torch_image_recipe.py: lr_schedule kind {schedule['kind']!r} is not done here")
sched = torch.optim.lr_scheduler.LambdaLR(opt, rate)
loader = torch.utils.data.DataLoader(train_set, batch_size=batch, shuffle=True, drop_last=True,
                                     num_workers=a.loader_workers, worker_init_fn=unpin,
                                     persistent_workers=a.loader_workers > 0,
                                     generator=torch.Generator().manual_seed(a.seed))
test_loader = torch.utils.data.DataLoader(test_set, batch_size=500, num_workers=a.loader_workers,
                                          worker_init_fn=unpin)


def evaluate():
    net.eval()
    right = 0
    with torch.no_grad():
        for x, y in test_loader:
            right += (net(x).argmax(1) == y).sum().item()
    net.train()
    return right / len(test_set)


os.makedirs(a.out, exist_ok=True)
started = now()
records = open(os.path.join(a.out, "worker-0.jsonl"), "w")
write = lambda r: (records.write(json.dumps(r) + "\n"), records.flush())
net.train()
step, trained, window, step_ms, accuracy = 0, 0.0, [], [], None
while step < steps:
    for x, y in loader:
        began = time.perf_counter()
        loss = F.cross_entropy(net(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        spent = time.perf_counter() - began
        step += 1
        trained += spent
        step_ms.append(spent * 1e3)
        window.append(loss.item())
        if step % display_every == 0 or step == steps:
            write({"event": "step", "step": step, "loss": sum(window) / len(window), "train_seconds": trained})
            window = []
        if step == steps:
            break
        if step % eval_every == 0:
            accuracy = evaluate()
            write({"event": "eval", "step": step, "test_accuracy": accuracy, "train_seconds": trained})
accuracy = evaluate()
step_ms.sort()
write({"event": "done", "step": step, "steps": steps, "test_accuracy": accuracy, "train_seconds": trained,
       "final_loss": loss.item(), "ms_per_step_median": step_ms[len(step_ms) // 2], "kernels": common.kernels()})
records.close()
run = {"format": "shoal-run", "status": "done", "started": started, "ended": now(), "restarts": 0,
       "commit": "pytorch " + torch.__version__, "peer": "torch_image_recipe.py"}
with open(os.path.join(a.out, "run.json"), "w") as f:
    json.dump(run, f, indent=1)
print(json.dumps({"steps": steps, "test_accuracy": accuracy, "train_seconds": trained}))
