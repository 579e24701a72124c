#!/usr/bin/python3
# Reference values for tests/unit/updater_test.cpp, computed once with
# PyTorch's own optimizers (torch 1.13) and pasted there as constants. Run with the Python that has torch:
#   /usr/bin/python3 tests/unit/updater_reference.py
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

