#!/usr/bin/python3
"""PyTorch peer, synchronous data parallel: DistributedDataParallel over gloo on
loopback, W processes of one thread each, B records per process per step; the same
model, data, initialisation and updater as shoal's BSP runs of configs/fashion-*.yaml.

  torch_ddp.py {mlp|cnn} [--world W] [--batch B] [--steps S]
      ms per step (the median of the ranks' medians)
  torch_ddp.py {mlp|cnn} --target-accuracy A [--eval-every K] [--max-steps S] ...
      training seconds until rank 0's test accuracy, evaluated every K steps
      (evaluation time excluded), first reaches A

Prints one JSON line."""
import json, os, socket, statistics, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(rank, a, port, queue):
    common.at_its_best(1, a.blas_core, a.cpu_capability, core=rank)
    import torch, torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=a.world)
    torch.manual_seed(a.seed)                                  # the same initial parameters on every rank
    x, y = common.dataset("train")
    x, y = x[rank::a.world], y[rank::a.world]                  # this rank's shard
    net = torch.nn.parallel.DistributedDataParallel(common.model(a.kind))
    out = {"rank": rank, "kernels": common.kernels(), "losses": []}
    if a.target_accuracy > 0:
        test = common.dataset("test") if rank == 0 else None
        trace = []

        def on_eval(step):
            stop = torch.zeros(1)
            if rank == 0:
                trace.append(common.accuracy(net.module, *test))
                stop[0] = trace[-1] >= a.target_accuracy
            dist.broadcast(stop, 0)
            return bool(stop[0])

        seconds = common.train(net, x, y, a.batch, a.max_steps, a.lr, a.seed + rank, a.eval_every, on_eval,
                               out["losses"])
        out.update(steps=len(seconds), train_seconds=sum(seconds), test_accuracy=trace[-1] if trace else None)
    else:
        out["ms"] = common.median_ms(common.train(net, x, y, a.batch, a.steps + 10, a.lr, a.seed + rank,
                                                losses=out["losses"]))
    queue.put(out)
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = common.arguments(batch=32)
    ap.add_argument("--world", type=int, default=2)
    a = ap.parse_args()
    common.keep_large_blocks()  # the ranks inherit the allocator's settings
    # Plain multiprocessing, not torch's: a rank must not load torch before it pins its threads.
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    queue, port = ctx.Queue(), free_port()
    procs = [ctx.Process(target=rank_main, args=(r, a, port, queue)) for r in range(a.world)]
    for p in procs:
        p.start()
    outs = sorted((queue.get(timeout=3600) for _ in procs), key=lambda o: o["rank"])
    for p in procs:
        p.join()
        if p.exitcode != 0:
            sys.exit(f"torch_ddp: rank process exited {p.exitcode}")
    import torch
    res = {"peer": "pytorch-ddp-gloo-" + torch.__version__, "model": a.kind, "world": a.world, "batch_per_worker": a.batch,
           "kernels": outs[0]["kernels"], "losses": outs[0]["losses"]}
    if a.target_accuracy > 0:
        res.update({"target_accuracy": a.target_accuracy, "eval_every": a.eval_every,
                    "reached": outs[0]["test_accuracy"] is not None and outs[0]["test_accuracy"] >= a.target_accuracy,
                    "steps": outs[0]["steps"], "train_seconds": max(o["train_seconds"] for o in outs),
                    "test_accuracy": outs[0]["test_accuracy"]})
    else:
        res["ms_per_step_median"] = statistics.median(o["ms"] for o in outs)
    print(json.dumps(res))
