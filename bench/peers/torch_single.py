#!/usr/bin/python3
"""PyTorch peer, one process: the same model, data, initialisation and updater as
shoal's configs/fashion-{mlp,cnn}.yaml trained by dl-worker --standalone.

  torch_single.py {mlp|cnn} [--threads N] [--batch B] [--steps S] [--device cuda] [--bf16]
                  [--blas-core CORE] [--cpu-capability CAP]
      ms per training step (median past the first 10 steps)
  torch_single.py {mlp|cnn} --target-accuracy A [--eval-every K] [--max-steps S] ...
      training seconds until the test accuracy, evaluated every K steps (evaluation
      time excluded), first reaches A
  --bf16: products and convolutions in bfloat16 (torch.autocast on the CPU), as
      shoal's train.compute: bf16

Prints one JSON line."""
import json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common

ap = common.arguments(batch=64)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--device", default="cpu", help="cpu, or cuda: the model and the data on GPU 0")
ap.add_argument("--bf16", action="store_true", help="train and evaluate under bfloat16 autocast")
a = ap.parse_args()
common.at_its_best(a.threads, a.blas_core, a.cpu_capability)
import torch

torch.manual_seed(a.seed)
x, y = common.dataset("train")
net = common.model(a.kind)
if a.device != "cpu":
    x, y, net = x.to(a.device), y.to(a.device), net.to(a.device)
out = {"peer": "pytorch-" + torch.__version__, "model": a.kind, "threads": a.threads, "batch": a.batch,
       "device": a.device, "compute": "bf16" if a.bf16 else "fp32", "kernels": common.kernels()}
losses = []
if a.target_accuracy > 0:
    xt, yt = common.dataset("test")
    trace = []

    def on_eval(step):
        trace.append((step, common.accuracy(net, xt, yt, bf16=a.bf16)))
        return trace[-1][1] >= a.target_accuracy

    seconds = common.train(net, x, y, a.batch, a.max_steps, a.lr, a.seed, a.eval_every, on_eval, losses, a.bf16)
    reached = trace and trace[-1][1] >= a.target_accuracy
    out.update({"target_accuracy": a.target_accuracy, "eval_every": a.eval_every, "reached": bool(reached),
                "steps": len(seconds), "train_seconds": sum(seconds), "test_accuracy": trace[-1][1] if trace else None})
else:
    out["ms_per_step_median"] = common.median_ms(common.train(net, x, y, a.batch, a.steps + 10, a.lr, a.seed, losses=losses,
                                                             bf16=a.bf16))
out["losses"] = losses
print(json.dumps(out))
