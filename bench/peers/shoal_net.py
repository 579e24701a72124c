#!/usr/bin/python3
"""A shoal job's net as a torch.nn.Module: the same layers, in the same order, each
holding its parameters under shoal's names ("conv1.weight", "bn1.running_mean"), so
that `dl-ckpt export` loads into it and a PyTorch peer trains exactly the net a
config describes. Used by the peers and by the tests; importable, or run as

    shoal_net.py JOB.yaml [--npz MODEL.npz]

which prints the net's parameter count (and, with --npz, checks that the export
loads into it) as one JSON line.

Layer types: data, convolution, pooling (max, avg, global, pad, ceil_mode), lrn,
batch_norm, relu, sigmoid, dropout, flatten, concat, add, fully_connected and the
softmax loss (the logits are the module's output). Initialisation is PyTorch's own."""
import json
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class ShoalNet(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.order = []  # (name, type, sources, module or None)
        shapes = {}
        for layer in layers:
            name, kind = layer["name"], layer["type"]
            srcs = layer.get("srclayers", [])
            srcs = [srcs] if isinstance(srcs, str) else list(srcs)
            if kind == "softmax_loss":
                self.output = srcs[0]
                continue
            module, shapes[name] = self._make(layer, [shapes[s] for s in srcs])
            if module is not None:
                self.add_module(name, module)
            self.order.append((name, kind, srcs, module))

    @staticmethod
    def _make(layer, ins):
        kind = layer["type"]
        if kind == "data":
            return None, list(layer["shape"])
        x = ins[0] if ins else None
        if kind == "convolution":
            k, s, p = layer["kernel"], layer.get("stride", 1), layer.get("pad", 0)
            out = [layer["num_output"]] + [(d + 2 * p - k) // s + 1 for d in x[1:]]
            return nn.Conv2d(x[0], layer["num_output"], k, s, p, bias=layer.get("bias", True)), out
        if kind == "pooling":
            if layer.get("global"):
                return nn.AdaptiveAvgPool2d(1) if layer.get("pool") == "avg" else nn.AdaptiveMaxPool2d(1), [x[0], 1, 1]
            k = layer["kernel"]
            args = dict(kernel_size=k, stride=layer.get("stride", k), padding=layer.get("pad", 0),
                        ceil_mode=bool(layer.get("ceil_mode", False)))
            module = nn.AvgPool2d(**args) if layer.get("pool") == "avg" else nn.MaxPool2d(**args)
            with torch.no_grad():
                out = list(module(torch.zeros([1] + x)).shape[1:])
            return module, out
        if kind == "lrn":
            return nn.LocalResponseNorm(layer.get("local_size", 5), layer.get("alpha", 1e-4),
                                        layer.get("beta", 0.75), layer.get("k", 1.0)), x
        if kind == "batch_norm":
            norm = nn.BatchNorm2d if len(x) == 3 else nn.BatchNorm1d
            return norm(x[0], eps=layer.get("eps", 1e-5), momentum=layer.get("momentum", 0.1)), x
        if kind == "relu":
            return nn.ReLU(), x
        if kind == "sigmoid":
            return nn.Sigmoid(), x
        if kind == "dropout":
            return nn.Dropout(layer.get("ratio", 0.5)), x
        if kind == "flatten":
            return nn.Flatten(), [math.prod(x)]
        if kind == "concat":
            return None, [sum(s[0] for s in ins)] + x[1:]
        if kind == "add":
            return None, x
        if kind == "fully_connected":
            return nn.Sequential(nn.Flatten(), nn.Linear(math.prod(x), layer["num_output"])), [layer["num_output"]]
        raise ValueError(f"layer '{layer['name']}': type '{kind}' has no PyTorch form here")

    def forward(self, data):
        values = {}
        for name, kind, srcs, module in self.order:
            if kind == "data":
                values[name] = data
            elif kind == "concat":
                values[name] = torch.cat([values[s] for s in srcs], 1)
            elif kind == "add":
                values[name] = sum(values[s] for s in srcs)
            else:
                values[name] = module(values[srcs[0]])
        return values[self.output]

    def load_shoal(self, arrays):
        """Loads {shoal name: array} (an export's), every tensor of the net and nothing else,
        batch norm's num_batches_tracked included. A fully connected layer's Linear is module 1
        of its Sequential."""
        own = self.state_dict()
        names = {k: k.replace(".1.weight", ".weight").replace(".1.bias", ".bias") for k in own}
        missing = [ours for ours in names.values() if ours not in arrays]
        if missing:
            raise KeyError(f"the export lacks '{missing[0]}'")
        extra = set(arrays) - set(names.values())
        if extra:
            raise KeyError(f"the export has tensors the net lacks: {sorted(extra)[:5]}")
        state = dict(own)
        for theirs, ours in names.items():
            state[theirs] = torch.as_tensor(arrays[ours]).reshape(own[theirs].shape)
        self.load_state_dict(state)


def from_job(path):
    import yaml
    with open(path) as f:
        return ShoalNet(yaml.safe_load(f)["model"]["layers"])


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("job")
    ap.add_argument("--npz")
    a = ap.parse_args()
    net = from_job(a.job)
    out = {"params": sum(p.numel() for p in net.parameters())}
    if a.npz:
        import numpy
        net.load_shoal(dict(numpy.load(a.npz)))
        out["loaded"] = a.npz
    print(json.dumps(out))
