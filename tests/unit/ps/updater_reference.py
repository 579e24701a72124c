#!/usr/bin/python3
# Reference values for tests/unit/updater_test.cpp and lr_schedule_test.cpp,
# computed once with PyTorch's own optimizers and schedulers (torch 1.13) and
# pasted there as constants. Run with the Python that has torch:
#   /usr/bin/python3 tests/unit/ps/updater_reference.py
import torch

W0 = [0.5, -1.5, 2.0, 0.0]
# The gradient of each step (the last element stays 0 for two steps: 0/(0+eps)).
GRADS = [[0.1, -0.2, 0.3, 0.0], [-0.4, 0.5, 0.25, 0.0], [0.2, 0.2, -0.6, 0.05]]
LR, WD = 0.1, 0.01

# (case, optimizer factory, {our state name: torch's state key})
CASES = [
    ("sgd", lambda p: torch.optim.SGD(p, lr=LR, weight_decay=WD), {}),
    ("momentum", lambda p: torch.optim.SGD(p, lr=LR, momentum=0.9, weight_decay=WD),
     {"velocity": "momentum_buffer"}),
    ("nesterov", lambda p: torch.optim.SGD(p, lr=LR, momentum=0.9, nesterov=True, weight_decay=WD),
     {"velocity": "momentum_buffer"}),
    ("adagrad", lambda p: torch.optim.Adagrad(p, lr=LR, weight_decay=WD, eps=1e-10), {"sum_sq": "sum"}),
    ("rmsprop", lambda p: torch.optim.RMSprop(p, lr=LR, alpha=0.99, eps=1e-8, weight_decay=WD),
     {"square_avg": "square_avg"}),
    ("rmsprop alpha 0.9 eps 1e-3", lambda p: torch.optim.RMSprop(p, lr=LR, alpha=0.9, eps=1e-3, weight_decay=WD),
     {"square_avg": "square_avg"}),
    ("adam", lambda p: torch.optim.Adam(p, lr=LR, betas=(0.9, 0.999), eps=1e-8, weight_decay=WD),
     {"exp_avg": "exp_avg", "exp_avg_sq": "exp_avg_sq"}),
    ("adam betas 0.8 0.99 eps 1e-3", lambda p: torch.optim.Adam(p, lr=LR, betas=(0.8, 0.99), eps=1e-3, weight_decay=WD),
     {"exp_avg": "exp_avg", "exp_avg_sq": "exp_avg_sq"}),
]


def literal(x):
    s = "%.9g" % x  # 9 significant digits: the float32 exactly
    return s + ("f" if "." in s or "e" in s else ".0f")


def floats(t):
    return "{" + ", ".join(literal(x) for x in t.tolist()) + "}"


for name, make, state_keys in CASES:
    w = torch.tensor(W0, dtype=torch.float32, requires_grad=True)
    opt = make([w])
    print("// %s" % name)
    for g in GRADS:
        w.grad = torch.tensor(g, dtype=torch.float32)
        opt.step()
        print("  values after step: %s" % floats(w.detach()))
    for ours, theirs in state_keys.items():
        print("  state %s: %s" % (ours, floats(opt.state[w][theirs])))


def lrs(make_scheduler, steps):
    """The learning rate of each of `steps` updates (base 1.0), scheduler stepped after each update."""
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    sched = make_scheduler(opt)
    out = []
    for _ in range(steps):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


S = torch.optim.lr_scheduler
SCHEDULES = [
    ("step every 3 gamma 0.5", lambda o: S.StepLR(o, step_size=3, gamma=0.5)),
    ("exponential every 1 gamma 0.9", lambda o: S.ExponentialLR(o, gamma=0.9)),
    ("cosine over 6", lambda o: S.CosineAnnealingLR(o, T_max=6)),
    # warm-up over 4 updates: factor (t+1)/4 for t < 4, then 1
    ("warmup 4", lambda o: S.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=3)),
    ("warmup 4, step every 3 gamma 0.5", lambda o: S.ChainedScheduler(
        [S.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=3), S.StepLR(o, step_size=3, gamma=0.5)])),
    ("warmup 4, exponential gamma 0.9", lambda o: S.ChainedScheduler(
        [S.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=3), S.ExponentialLR(o, gamma=0.9)])),
]
for name, make in SCHEDULES:
    print("// %s: %s" % (name, ", ".join("%.12g" % x for x in lrs(make, 8))))
