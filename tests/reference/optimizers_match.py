"""The optimizer ops over three steps against an implementation nobody here wrote:
torch.optim where its update is Fluid's (SGD, Momentum, Adagrad, Adadelta), and numpy from
Fluid's documented formulas where torch's differs (Adam, RMSProp and Adamax put epsilon
elsewhere; torch has no decayed Adagrad). Each step applies its own gradient; fp32 and fp64.

usage: /usr/bin/python3 optimizers_match.py RILL WORK_DIR      (needs numpy and torch)
"""
import os
import shutil
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import op_reference  # noqa: E402

rill, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
STEPS = 3


def torch_steps(make, p0, grads):
    """p0 after one torch.optim step per gradient, in fp64."""
    p = torch.tensor(p0.astype(np.float64), requires_grad=True)
    opt = make([p])
    for g in grads:
        p.grad = torch.tensor(g.astype(np.float64))
        opt.step()
    return p.detach().numpy()


def numpy_steps(update, p0, grads, state):
    """p0 after `update(p, g, state, t)` for each gradient, in fp64."""
    p = p0.astype(np.float64)
    state = {k: v.astype(np.float64) for k, v in state.items()}
    for t, g in enumerate(grads, 1):
        p = update(p, g.astype(np.float64), state, t)
    return p


def rmsprop(decay, momentum, eps, centered):
    def update(p, g, s, t):
        s["ms"] = decay * s["ms"] + (1 - decay) * g * g
        if centered:
            s["mg"] = decay * s["mg"] + (1 - decay) * g
            s["mom"] = momentum * s["mom"] + LR * g / np.sqrt(s["ms"] - s["mg"] ** 2 + eps)
        else:
            s["mom"] = momentum * s["mom"] + LR * g / np.sqrt(s["ms"] + eps)
        return p - s["mom"]
    return update


def adamax(b1, b2, eps):
    def update(p, g, s, t):
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["u"] = np.maximum(b2 * s["u"] + eps, np.abs(g))
        return p - LR / (1 - b1 ** t) * s["m"] / s["u"]
    return update


def adam(b1, b2, eps):
    def update(p, g, s, t):
        s["m1"] = b1 * s["m1"] + (1 - b1) * g
        s["m2"] = b2 * s["m2"] + (1 - b2) * g * g
        return p - LR * np.sqrt(1 - b2 ** t) / (1 - b1 ** t) * s["m1"] / (np.sqrt(s["m2"]) + eps)
    return update


def decayed_adagrad(decay, eps):
    def update(p, g, s, t):
        s["m"] = decay * s["m"] + (1 - decay) * g * g
        return p - LR * g / (np.sqrt(s["m"]) + eps)
    return update


failed = False
rng = np.random.default_rng(3)
for dt in (np.float32, np.float64):
    tag = np.dtype(dt).name
    LR = float(dt(0.05))  # the learning rate as the program's [1] tensor holds it
    p0 = rng.standard_normal((4, 5)).astype(dt)
    grads = [rng.standard_normal((4, 5)).astype(dt) for _ in range(STEPS)]
    zeros = np.zeros_like(p0)
    f32 = lambda v: float(np.float32(v))  # noqa: E731  a FLOAT attribute as the op reads it
    # name: (op, attrs, accumulators {slot: initial}, extra inputs {slot: per-step arrays}, reference)
    cases = {
        "sgd": ("sgd", {}, {}, {}, torch_steps(lambda ps: torch.optim.SGD(ps, lr=LR), p0, grads)),
        "momentum nesterov": ("momentum", dict(mu=0.8, use_nesterov=True), {"Velocity": zeros}, {},
                              torch_steps(lambda ps: torch.optim.SGD(ps, lr=LR, momentum=f32(0.8),
                                                                     nesterov=True), p0, grads)),
        "adagrad": ("adagrad", {}, {"Moment": zeros}, {},
                    torch_steps(lambda ps: torch.optim.Adagrad(ps, lr=LR, eps=f32(1e-6)), p0, grads)),
        "adadelta": ("adadelta", dict(rho=0.9), {"AvgSquaredGrad": zeros, "AvgSquaredUpdate": zeros}, {},
                     torch_steps(lambda ps: torch.optim.Adadelta(ps, lr=LR, rho=f32(0.9), eps=f32(1e-6)), p0, grads)),
        "adam": ("adam", {}, {"Moment1": zeros, "Moment2": zeros},
                 {"Beta1Pow": [np.array([f32(0.9) ** t], dt) for t in range(1, STEPS + 1)],
                  "Beta2Pow": [np.array([f32(0.999) ** t], dt) for t in range(1, STEPS + 1)]},
                 numpy_steps(adam(f32(0.9), f32(0.999), f32(1e-8)), p0, grads, {"m1": zeros, "m2": zeros})),
        "rmsprop": ("rmsprop", dict(decay=0.8, momentum=0.5, epsilon=1e-6), {"MeanSquare": zeros, "Moment": zeros}, {},
                    numpy_steps(rmsprop(f32(0.8), f32(0.5), f32(1e-6), False), p0, grads,
                                {"ms": zeros, "mom": zeros})),
        "rmsprop centered": ("rmsprop", dict(decay=0.8, momentum=0.5, epsilon=1e-6, centered=True),
                             {"MeanSquare": zeros, "Moment": zeros, "MeanGrad": zeros}, {},
                             numpy_steps(rmsprop(f32(0.8), f32(0.5), f32(1e-6), True), p0, grads,
                                         {"ms": zeros, "mom": zeros, "mg": zeros})),
        "adamax": ("adamax", {}, {"Moment": zeros, "InfNorm": zeros},
                   {"Beta1Pow": [np.array([f32(0.9) ** t], dt) for t in range(1, STEPS + 1)]},
                   numpy_steps(adamax(f32(0.9), f32(0.999), f32(1e-8)), p0, grads, {"m": zeros, "u": zeros})),
        "decayed_adagrad": ("decayed_adagrad", dict(decay=0.9), {"Moment": zeros}, {},
                            numpy_steps(decayed_adagrad(f32(0.9), f32(1e-6)), p0, grads, {"m": zeros})),
    }
    # One program: each case's parameter and accumulators, updated in place by STEPS ops.
    feeds = {"lr": np.array([LR], dt)}
    decl, ops = op_reference.declare("lr", feeds["lr"]), ""
    for k, (name, (op, attrs, accs, extra, _)) in enumerate(cases.items()):
        p = "p%d" % k
        feeds[p] = p0
        for slot, init in accs.items():
            feeds["%s_%s" % (p, slot)] = init
        for t in range(STEPS):
            feeds["%s_g%d" % (p, t)] = grads[t]
            ins = {"Param": p, "Grad": "%s_g%d" % (p, t), "LearningRate": "lr"}
            outs = {"ParamOut": p}
            for slot in accs:
                ins[slot] = outs[slot + "Out"] = "%s_%s" % (p, slot)
            for slot, values in extra.items():
                ins[slot] = "%s_%s%d" % (p, slot, t)
                feeds[ins[slot]] = values[t]
            ops += 'ops { type: "%s" %s %s %s }\n' % (
                op, " ".join('inputs { parameter: "%s" arguments: "%s" }' % kv for kv in ins.items()),
                " ".join('outputs { parameter: "%s" arguments: "%s" }' % kv for kv in outs.items()),
                op_reference.attrs(**attrs))
    decl += "".join(op_reference.declare(n, v) for n, v in feeds.items() if n != "lr")
    program = os.path.join(work, tag + ".pbtxt")
    with open(program, "w") as f:
        f.write("blocks { idx: 0 parent_idx: -1\n" + decl + ops + "}\n")
    try:
        got = op_reference.run_program(rill, work, tag, program, feeds, ["p%d" % k for k in range(len(cases))])
    except RuntimeError as e:
        print("FAIL: %s: %s" % (tag, e))
        failed = True
        continue
    tol = 2e-5 if dt == np.float32 else 1e-12
    for k, (name, case) in enumerate(cases.items()):
        failed |= not op_reference.matches("%s %s, %d steps" % (tag, name, STEPS), got["p%d" % k],
                                           case[4].astype(dt), tol)
sys.exit(1 if failed else 0)
