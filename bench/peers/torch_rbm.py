#!/usr/bin/python3
"""PyTorch peer of configs/fashion-rbm1.yaml trained by dl-worker --standalone: a
Bernoulli RBM by CD-k on torch tensors with shoal's rules (lib/ops/rbm.h, lib/layers/
rbm_layer.cpp): weights uniform with standard deviation 0.1, biases 0; hidden units
sampled, visible units left as probabilities; the gradient is the chain's statistics
less the data's, a batch mean; SGD with momentum and weight decay on every parameter
(torch.optim.SGD's rule, shoal's too); the reconstruction error is each record's summed
squared error after the first Gibbs step, and on the test set the mean-field one.

  torch_rbm.py [--threads N] [--batch B] [--hidden H] [--k K] [--epochs E] ...

Prints one JSON line: ms per step (median past the first 10), each epoch's mean
training reconstruction error, and the test set's after the last epoch."""
import argparse, json, math, os, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--batch", type=int, default=100)
ap.add_argument("--hidden", type=int, default=1000)
ap.add_argument("--k", type=int, default=1)
ap.add_argument("--epochs", type=int, default=1)
ap.add_argument("--lr", type=float, default=0.1)
ap.add_argument("--momentum", type=float, default=0.5)
ap.add_argument("--weight-decay", type=float, default=0.0002)
ap.add_argument("--seed", type=int, default=1)
common.kernel_arguments(ap)
a = ap.parse_args()
common.at_its_best(a.threads, a.blas_core, a.cpu_capability)
import torch

torch.manual_seed(a.seed)
x, y = common.dataset("train")
x = x.flatten(1)
xt = common.dataset("test")[0].flatten(1)
visible = x.shape[1]
w = ((torch.rand(a.hidden, visible) * 2 - 1) * 0.1 * math.sqrt(3)).requires_grad_()
b = torch.zeros(a.hidden, requires_grad=True)   # hidden
c = torch.zeros(visible, requires_grad=True)    # visible
opt = torch.optim.SGD([w, b, c], lr=a.lr, momentum=a.momentum, weight_decay=a.weight_decay)
steps_per_epoch = len(x) // a.batch
seconds, epoch_errors, losses = [], [], []
batches = common.epochs(x, y, a.batch, a.seed)
with torch.no_grad():
    for epoch in range(a.epochs):
        errors = []
        for _ in range(steps_per_epoch):
            v0, _ = next(batches)
            t = time.perf_counter()
            ph0 = torch.sigmoid(torch.addmm(b, v0, w.t()))
            h = torch.bernoulli(ph0)
            for step in range(1, a.k + 1):
                pv = torch.sigmoid(torch.addmm(c, h, w))
                if step == 1:
                    err = ((v0 - pv) ** 2).sum(1).mean()
                ph = torch.sigmoid(torch.addmm(b, pv, w.t()))
                if step < a.k:
                    h = torch.bernoulli(ph)
            n = v0.shape[0]
            w.grad = (ph.t() @ pv - ph0.t() @ v0) / n
            b.grad = (ph - ph0).mean(0)
            c.grad = (pv - v0).mean(0)
            opt.step()
            seconds.append(time.perf_counter() - t)
            errors.append(err.item())
            if len(losses) < common.LOSSES:
                losses.append(errors[-1])
        epoch_errors.append(sum(errors) / len(errors))
    test_ph = torch.sigmoid(torch.addmm(b, xt, w.t()))
    test_error = ((xt - torch.sigmoid(torch.addmm(c, test_ph, w))) ** 2).sum(1).mean().item()
print(json.dumps({"peer": "pytorch-" + torch.__version__, "threads": a.threads, "batch": a.batch, "hidden": a.hidden,
                  "k": a.k, "ms_per_step_median": common.median_ms(seconds), "epoch_errors": epoch_errors,
                  "test_error": test_error, "losses": losses, "kernels": common.kernels()}))
