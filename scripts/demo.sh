#!/usr/bin/env bash
# make demo: train the Fashion-MNIST MLP on 2 workers and 1 server (BSP) for
# 2 epochs, then print the test accuracy. Builds first; shards on first use.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# The job's hyper-parameters are the PyTorch peers' (lr 0.05, momentum 0.9);
# the demo lowers the rate tenfold for the last quarter so the final
# parameters settle instead of ending on a noisy step.
exec scripts/train-local.sh configs/fashion-mlp.yaml \
  train.epochs=2 train.lr_schedule.kind=step train.lr_schedule.every=1400 train.lr_schedule.gamma=0.1
