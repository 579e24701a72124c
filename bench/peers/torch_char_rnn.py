#!/usr/bin/python3
"""PyTorch peer of a shoal char-RNN (bench/compare_peers.py's rbm and char-rnn rows write
the job): the corpus cut as dl-shard --text cuts it (its distinct bytes in increasing order
the vocabulary, windows of --window symbols sharing one, the last 5% the test set);
nn.Embedding → nn.GRU → nn.Linear per step, the next symbol's cross-entropy over every
step; Adam, clip_grad_norm_; batches of random windows, a new order each epoch.

  torch_char_rnn.py CORPUS [--threads N] [--window W] [--batch B] [--embed E] [--hidden H]
                    [--steps S] [--lr R] [--clip C]

Prints one JSON line: ms per step (median past the first 10), the last 50 steps' mean
training loss, and the test set's loss and next-symbol accuracy after the last step."""
import argparse, json, os, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common

ap = argparse.ArgumentParser()
ap.add_argument("corpus")
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--window", type=int, default=51)
ap.add_argument("--batch", type=int, default=32)
ap.add_argument("--embed", type=int, default=64)
ap.add_argument("--hidden", type=int, default=512)
ap.add_argument("--steps", type=int, default=200)
ap.add_argument("--lr", type=float, default=0.002)
ap.add_argument("--clip", type=float, default=5.0)
ap.add_argument("--seed", type=int, default=1)
common.kernel_arguments(ap)
a = ap.parse_args()
common.at_its_best(a.threads, a.blas_core, a.cpu_capability)
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(a.seed)
data = np.frombuffer(open(a.corpus, "rb").read(), np.uint8)
vocabulary = np.unique(data)
ids = np.searchsorted(vocabulary, data).astype(np.int64)
stride = a.window - 1
windows = (len(ids) - 1) // stride
test = int(np.ceil(0.05 * windows))
starts = np.arange(windows) * stride
records = torch.tensor(np.stack([ids[s:s + a.window] for s in starts]))
train, held = records[:windows - test], records[windows - test:]
V = len(vocabulary)


class CharRnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, a.embed)
        self.gru = nn.GRU(a.embed, a.hidden, batch_first=True)
        self.out = nn.Linear(a.hidden, V)

    def forward(self, x):
        h, _ = self.gru(self.embed(x))
        return self.out(h)


net = CharRnn()
opt = torch.optim.Adam(net.parameters(), lr=a.lr)
g = torch.Generator().manual_seed(a.seed)
order, cursor = torch.randperm(len(train), generator=g), 0
seconds, losses = [], []
for step in range(a.steps):
    if cursor + a.batch > len(train):
        order, cursor = torch.randperm(len(train), generator=g), 0
    batch = train[order[cursor:cursor + a.batch]]
    cursor += a.batch
    t = time.perf_counter()
    opt.zero_grad()
    logits = net(batch[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, V), batch[:, 1:].reshape(-1))
    loss.backward()
    nn.utils.clip_grad_norm_(net.parameters(), a.clip)
    opt.step()
    seconds.append(time.perf_counter() - t)
    losses.append(loss.item())
with torch.no_grad():
    total, right, count = 0.0, 0, 0
    for i in range(0, len(held), 256):
        b = held[i:i + 256]
        logits = net(b[:, :-1]).reshape(-1, V)
        target = b[:, 1:].reshape(-1)
        total += F.cross_entropy(logits, target, reduction="sum").item()
        right += (logits.argmax(1) == target).sum().item()
        count += target.numel()
tail = losses[-50:]
print(json.dumps({"peer": "pytorch-" + torch.__version__, "threads": a.threads, "vocabulary": V,
                  "ms_per_step_median": common.median_ms(seconds), "train_loss_last50": sum(tail) / len(tail),
                  "test_loss": total / count, "test_accuracy": right / count,
                  "losses": losses[:common.LOSSES], "kernels": common.kernels()}))
