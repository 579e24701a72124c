#!/usr/bin/env python3
"""Evaluates an exported shoal MLP in PyTorch: the .npz dl-ckpt wrote, loaded
into the same net (784 -> 256 -> relu -> 128 -> relu -> 10, Linear weights
[out, in] as shoal lays them out), on Fashion-MNIST's test set (pixels / 255).

    torch_export_check.py MODEL.npz [DATASET_DIR]

Prints {"test_accuracy": ..., "records": ...} as one JSON line.
"""
import gzip
import json
import sys

import numpy
import torch


def read_idx(path, offset):
    with gzip.open(path, "rb") as f:
        return numpy.frombuffer(f.read(), dtype=numpy.uint8, offset=offset)


def main():
    npz = sys.argv[1]
    data = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/datasets/fashion-mnist"
    images = read_idx(f"{data}/t10k-images-idx3-ubyte.gz", 16).reshape(-1, 784).astype(numpy.float32) / 255.0
    labels = read_idx(f"{data}/t10k-labels-idx1-ubyte.gz", 8).astype(numpy.int64)

    net = torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 10))
    weights = numpy.load(npz)
    with torch.no_grad():
        for i, name in ((0, "fc1"), (2, "fc2"), (4, "fc3")):
            layer = net[i]
            for part in ("weight", "bias"):
                value = weights[f"{name}.{part}"]
                target = getattr(layer, part)
                assert value.dtype == numpy.float32, (name, part, value.dtype)
                assert tuple(value.shape) == tuple(target.shape), (name, part, value.shape, target.shape)
                target.copy_(torch.from_numpy(value))
        logits = net(torch.from_numpy(images))
    correct = int((logits.argmax(dim=1) == torch.from_numpy(labels)).sum())
    print(json.dumps({"test_accuracy": correct / len(labels), "records": len(labels)}))


if __name__ == "__main__":
    main()
