"""Paddle 2.x parameter groups (paddle.optimizer's parameters=[{"params": ..., options}]):
each group's rate factor, weight decay and the optimizer's own options, held against
torch.optim's parameter groups over a few steps of the same two-layer net."""
import numpy as np
import pytest
import torch

import rill.fluid as fluid
import rill.paddle as paddle

RNG = np.random.RandomState(7)
XS = RNG.randn(5, 4).astype("float32")
RATE = 0.05


def _train(make_optimizer, steps=3):
    """Trains Linear(4, 3) -> Linear(3, 2) on mean(out^2) in dygraph mode; returns
    (initial weights and biases, final ones), the same initial ones each call."""
    paddle.seed(11)
    with fluid.dygraph.guard():
        first, second = paddle.nn.Linear(4, 3), paddle.nn.Linear(3, 2)
        params = [first.weight, first.bias, second.weight, second.bias]
        start = [p.numpy().copy() for p in params]
        opt = make_optimizer(first.parameters(), second.parameters())
        for _ in range(steps):
            out = second(first(paddle.to_tensor(XS)))
            paddle.mean(out * out).backward()
            opt.step()
            opt.clear_grad()
        return start, [p.numpy() for p in params]


def _torch_train(start, make_optimizer, steps=3):
    """The same net in PyTorch from the same start (Paddle's [in, out] weights transposed)."""
    first, second = torch.nn.Linear(4, 3), torch.nn.Linear(3, 2)
    with torch.no_grad():
        for layer, (w, b) in ((first, start[0:2]), (second, start[2:4])):
            layer.weight.copy_(torch.from_numpy(w.T))
            layer.bias.copy_(torch.from_numpy(b))
    opt = make_optimizer(list(first.parameters()), list(second.parameters()))
    for _ in range(steps):
        out = second(first(torch.from_numpy(XS)))
        opt.zero_grad()
        torch.mean(out * out).backward()
        opt.step()
    return [first.weight.detach().numpy().T, first.bias.detach().numpy(), second.weight.detach().numpy().T,
            second.bias.detach().numpy()]


CASES = {
    # a factor on the rate and a weight decay of the second layer's own; the optimizer's decay for the first
    "sgd": (lambda a, b: paddle.optimizer.SGD(RATE, weight_decay=0.1, parameters=[
                {"params": a}, {"params": b, "learning_rate": 2.0, "weight_decay": 0.01}]),
            lambda a, b: torch.optim.SGD([{"params": a, "weight_decay": 0.1},
                                          {"params": b, "lr": RATE * 2.0, "weight_decay": 0.01}], lr=RATE)),
    # the first group's betas are the optimizer's, the second's its own
    "adam": (lambda a, b: paddle.optimizer.Adam(RATE, beta1=0.8, parameters=[
                 {"params": a}, {"params": b, "beta1": 0.5, "beta2": 0.9, "learning_rate": 0.5}]),
             lambda a, b: torch.optim.Adam([{"params": a, "betas": (0.8, 0.999)},
                                            {"params": b, "betas": (0.5, 0.9), "lr": RATE * 0.5}], lr=RATE, eps=1e-8)),
    # momentum and Nesterov per group; the L2 decay the momentum op applies, per group
    "momentum": (lambda a, b: paddle.optimizer.Momentum(RATE, momentum=0.9, weight_decay=0.1, parameters=[
                     {"params": a}, {"params": b, "momentum": 0.5, "use_nesterov": True, "weight_decay": 0.02}]),
                 lambda a, b: torch.optim.SGD([{"params": a, "momentum": 0.9, "weight_decay": 0.1},
                                               {"params": b, "momentum": 0.5, "nesterov": True, "weight_decay": 0.02}],
                                              lr=RATE)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_group_trains_as_pytorchs_parameter_group(name):
    ours, theirs = CASES[name]
    start, got = _train(ours)
    want = _torch_train(start, theirs)
    for g, w, s in zip(got, want, start):
        assert not np.allclose(g, s)  # every parameter moved
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)


def test_a_group_without_options_trains_as_no_groups():
    def rmsprop(groups):
        return lambda a, b: paddle.optimizer.RMSProp(RATE, parameters=groups(a, b))
    _, grouped = _train(rmsprop(lambda a, b: [{"params": a}, {"params": b}]))
    _, plain = _train(rmsprop(lambda a, b: a + b))
    for g, p in zip(grouped, plain):
        np.testing.assert_array_equal(g, p)
    # one step, so that the first layer's update reads only the initial values
    _, one = _train(rmsprop(lambda a, b: [{"params": a}, {"params": b}]), steps=1)
    _, other = _train(rmsprop(lambda a, b: [{"params": a}, {"params": b, "rho": 0.5}]), steps=1)
    np.testing.assert_array_equal(one[0], other[0])
    assert not np.allclose(one[2], other[2])


def test_bad_groups_are_refused_naming_what_was_wrong():
    with fluid.dygraph.guard():
        first, second = paddle.nn.Linear(4, 3), paddle.nn.Linear(3, 2)
        a, b = first.parameters(), second.parameters()
        with pytest.raises(ValueError, match="Adam: a parameter group may set .*beta1.*not 'momentum'"):
            paddle.optimizer.Adam(RATE, parameters=[{"params": a}, {"params": b, "momentum": 0.9}])
        with pytest.raises(ValueError, match="more than one parameter group: " + a[0].name):
            paddle.optimizer.SGD(RATE, parameters=[{"params": a}, {"params": a[:1] + b}])
        with pytest.raises(TypeError, match="ordered collections"):
            paddle.optimizer.SGD(RATE, parameters=[{"params": set(a)}])
        with pytest.raises(ValueError, match="each is a dict with 'params'"):
            paddle.optimizer.SGD(RATE, parameters=[{"params": a}, {"weight_decay": 0.1}])
        with pytest.raises(ValueError, match="beta2"):
            paddle.optimizer.Adam(RATE, parameters=[{"params": a, "beta2": 1.5}])
        with pytest.raises(TypeError, match="learning_rate is a factor"):
            paddle.optimizer.SGD(RATE, parameters=[{"params": a, "learning_rate": "0.1"}])
