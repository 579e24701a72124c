#!/usr/bin/python3
# Reference outputs and gradients of PyTorch's modules for the layers that
# mirror them, written once to torch_reference.json beside this file and read
# by torch_reference_test.cpp. Run with the Python that has torch:
#   /usr/bin/python3 tests/unit/layers/torch_reference.py
# Each case: a shoal layer (type and job-file fields), the module it mirrors,
# an input x, the module's parameters, and, for the objective sum(r * y), the
# output y, the input gradient dx and each parameter's gradient.
import json
import os

import torch
import torch.nn as nn

torch.manual_seed(20261129)

# Batch norm's parameters and running averages, by shoal's suffix.
BN = {"weight": "weight", "bias": "bias", "running_mean": "running_mean", "running_var": "running_var"}

CASES = [
    # (name, shoal type, shoal fields, module, input shape [N, C, H, W], {shoal param: module param})
    ("max pooling 3x3 stride 2, ceil_mode", "pooling", "{kernel: 3, stride: 2, ceil_mode: true}",
     nn.MaxPool2d(3, 2, ceil_mode=True), [2, 3, 8, 8], {}),
    ("max pooling 3x3 stride 1 pad 1", "pooling", "{kernel: 3, stride: 1, pad: 1}",
     nn.MaxPool2d(3, 1, padding=1), [2, 2, 5, 6], {}),
    ("average pooling 3x3 stride 2, ceil_mode", "pooling", "{pool: avg, kernel: 3, stride: 2, ceil_mode: true}",
     nn.AvgPool2d(3, 2, ceil_mode=True), [2, 3, 8, 8], {}),
    ("average pooling 3x3 stride 2 pad 1, ceil_mode", "pooling",
     "{pool: avg, kernel: 3, stride: 2, pad: 1, ceil_mode: true}",
     nn.AvgPool2d(3, 2, padding=1, ceil_mode=True), [2, 2, 7, 7], {}),
    ("global average pooling", "pooling", "{pool: avg, global: true}",
     nn.AdaptiveAvgPool2d(1), [2, 4, 5, 3], {}),
    ("lrn size 5", "lrn", "{local_size: 5, alpha: 0.1, beta: 0.75, k: 2.0}",
     nn.LocalResponseNorm(5, alpha=0.1, beta=0.75, k=2.0), [2, 7, 3, 3], {}),
    ("lrn size 4 (an even window)", "lrn", "{local_size: 4, alpha: 0.5, beta: 0.6, k: 1.0}",
     nn.LocalResponseNorm(4, alpha=0.5, beta=0.6, k=1.0), [2, 6, 2, 3], {}),
    ("batch norm 2d, training", "batch_norm", "{momentum: 0.1, eps: 0.00001}",
     nn.BatchNorm2d(3), [4, 3, 3, 5], BN),
    ("batch norm 1d, training, momentum 0.3", "batch_norm", "{momentum: 0.3, eps: 0.001}",
     nn.BatchNorm1d(6, momentum=0.3, eps=1e-3), [5, 6], BN),
    ("batch norm 2d, evaluation", "batch_norm", "{}", nn.BatchNorm2d(2).eval(), [3, 2, 2, 3], BN),
]


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def run(name, layer, fields, module, shape, params):
    x = (torch.rand(shape) * 4 - 2).requires_grad_(True)
    with torch.no_grad():
        for p in module.parameters():
            p.uniform_(-1.5, 1.5)
        for b in module.buffers():
            if b.is_floating_point():
                b.uniform_(0.5, 1.5)
    before = {n: flat(b) for n, b in module.named_buffers()}
    y = module(x)
    r = torch.rand(y.shape) * 2 - 1
    (y * r).sum().backward()
    case = {"name": name, "type": layer, "fields": fields, "shape": shape[1:], "batch": shape[0],
            "phase": "train" if module.training else "test",
            "x": flat(x), "r": flat(r), "y": flat(y), "dx": flat(x.grad), "params": {}}
    named, buffers = dict(module.named_parameters()), dict(module.named_buffers())
    for ours, theirs in params.items():
        if theirs in named:
            case["params"][ours] = {"value": flat(named[theirs]), "grad": flat(named[theirs].grad)}
        else:  # a running average: before the pass, and after
            case["params"][ours] = {"value": before[theirs], "after": flat(buffers[theirs])}
    return case


if __name__ == "__main__":
    cases = [run(*c) for c in CASES]
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_reference.json")
    with open(out, "w") as f:  # a case a line
        f.write('{"torch": %s, "cases": [\n' % json.dumps(torch.__version__))
        f.write(",\n".join(json.dumps(c, separators=(",", ":")) for c in cases))
        f.write("\n]}\n")
