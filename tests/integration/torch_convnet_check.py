#!/usr/bin/env python3
"""Evaluates an exported shoal convnet in PyTorch: the job's net built by
bench/peers/shoal_net.py, the .npz dl-ckpt wrote loaded into it (every tensor,
running averages included), in evaluation mode, on a CIFAR-10 binary test file,
normalised with the shard manifest's per-channel mean and std as shoal's loader does.

    torch_convnet_check.py JOB.yaml MODEL.npz TEST_BATCH.bin MANIFEST.json

Prints {"test_accuracy": ..., "records": ...} as one JSON line."""
import json
import os
import sys

import numpy
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "peers"))
import shoal_net  # noqa: E402


def main():
    job, npz, test, manifest = sys.argv[1:5]
    raw = numpy.fromfile(test, dtype=numpy.uint8).reshape(-1, 1 + 3072)
    labels = torch.tensor(raw[:, 0].astype(numpy.int64))
    images = torch.tensor(raw[:, 1:].astype(numpy.float32).reshape(-1, 3, 32, 32) / 255.0)
    m = json.load(open(manifest))
    mean = torch.tensor(m["mean"]).reshape(1, 3, 1, 1)
    std = torch.tensor(m["std"]).reshape(1, 3, 1, 1)
    net = shoal_net.from_job(job)
    net.load_shoal(dict(numpy.load(npz)))
    net.eval()
    with torch.no_grad():
        right = (net((images - mean) / std).argmax(1) == labels).sum().item()
    print(json.dumps({"test_accuracy": right / len(labels), "records": len(labels)}))


if __name__ == "__main__":
    main()
