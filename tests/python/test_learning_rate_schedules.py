"""fluid.layers' learning-rate schedules, run step by step against their formulas, and an
optimizer following one."""
import math

import numpy as np
import pytest

import rill.fluid as fluid
from rill.fluid import layers

SCHEDULES = [
    (lambda: layers.exponential_decay(1.0, 5, 0.5, staircase=True), lambda s: 0.5 ** math.floor(s / 5)),
    (lambda: layers.exponential_decay(2.0, 5, 0.5), lambda s: 2.0 * 0.5 ** (s / 5)),
    (lambda: layers.natural_exp_decay(1.0, 4, 0.5), lambda s: math.exp(-0.5 * s / 4)),
    (lambda: layers.inverse_time_decay(1.0, 4, 0.5, staircase=True), lambda s: 1 / (1 + 0.5 * math.floor(s / 4))),
    (lambda: layers.polynomial_decay(1.0, 5, 0.1, power=2.0), lambda s: 0.9 * (1 - min(s, 5) / 5) ** 2 + 0.1),
    (lambda: layers.polynomial_decay(1.0, 3, 0.0, cycle=True),
     lambda s: 1 - s / (3 * max(math.ceil(s / 3), 1))),
    (lambda: layers.piecewise_decay([2, 5], [1.0, 0.5, 0.1]), lambda s: 1.0 if s < 2 else 0.5 if s < 5 else 0.1),
    (lambda: layers.noam_decay(64, 4), lambda s: 64 ** -0.5 * min((s + 1) ** -0.5, 4 ** -1.5 * (s + 1))),
]


@pytest.mark.parametrize("make,formula", SCHEDULES)
def test_schedule_follows_its_formula(exe, make, formula):
    lr = make()
    exe.run(fluid.default_startup_program())
    for step in range(9):
        value, = exe.run(fetch_list=[lr])
        assert value.shape == (1,)
        np.testing.assert_allclose(value[0], formula(step), rtol=1e-5, err_msg="step %d" % step)


def test_piecewise_decay_needs_one_more_value_than_boundaries():
    with pytest.raises(ValueError, match="3 values for 3 boundaries"):
        layers.piecewise_decay([1, 2, 3], [1.0, 0.5, 0.1])


def test_an_optimizer_follows_a_schedule(exe):
    x = layers.data("x", [1])
    w = layers.create_parameter([1, 1], "float32", default_initializer=fluid.initializer.Constant(0.0))
    loss = layers.mean(layers.mul(x, w))  # d loss / d w = mean of x = 1
    fluid.optimizer.SGD(learning_rate=layers.piecewise_decay([2], [1.0, 0.25])).minimize(loss)
    exe.run(fluid.default_startup_program())
    ws = []
    for _ in range(4):
        exe.run(feed={"x": np.ones((2, 1), "float32")})
        ws.append(float(np.array(fluid.global_scope().find_var(w.name).get_tensor())[0, 0]))
    np.testing.assert_allclose(ws, [-1.0, -2.0, -2.25, -2.5])
