"""Optimizer.minimize on a program that is not the default one, an fp64 network's training,
and Fluid's operators on Variables (==, !=, a number on either side), as Fluid 0.14's own
tests use them."""
import numpy as np
import pytest

import rill.fluid as fluid
from rill.fluid import layers


def test_minimize_builds_into_the_losss_program_and_the_given_startup(exe):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = layers.data("x", [3])
        y = layers.fc(x, size=1, param_attr=fluid.ParamAttr(learning_rate=0.5))
        loss = layers.mean(y)
    before = (len(fluid.default_main_program().global_block().ops),
              len(fluid.default_startup_program().global_block().ops))
    ops, params_grads = fluid.optimizer.SGD(learning_rate=0.1).minimize(loss, startup)
    assert (len(fluid.default_main_program().global_block().ops),
            len(fluid.default_startup_program().global_block().ops)) == before
    # Every op the updates appended: the weight's own rate (global * its own), then its update.
    assert [op.type for op in ops] == ["sgd", "fill_constant", "elementwise_mul", "sgd"]
    assert all(op.block.program is main for op in ops)
    exe.run(startup)
    w = params_grads[1][0].name
    w0 = np.array(fluid.global_scope().find_var(w).get_tensor())
    exe.run(main, feed={"x": np.ones((2, 3), "float32")})
    w1 = np.array(fluid.global_scope().find_var(w).get_tensor())
    np.testing.assert_allclose(w0 - w1, 0.1 * 0.5 / 2 * 2, rtol=1e-5)  # d mean / dw = mean of x = 1


def test_a_float64_network_trains(exe):
    x = layers.data("x", [2], dtype="float64")
    y = layers.data("y", [1], dtype="float64")
    # Weights from zero, so the descent (and what the assertion sees) is the same every run.
    w = fluid.ParamAttr(initializer=fluid.initializer.Constant(0.0))
    loss = layers.mean(layers.square_error_cost(layers.fc(x, size=1, param_attr=w), y))
    fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    exe.run(fluid.default_startup_program())
    a = np.random.RandomState(0).rand(16, 2)
    b = a.sum(axis=1, keepdims=True)
    losses = [exe.run(feed={"x": a, "y": b}, fetch_list=[loss])[0][0] for _ in range(30)]
    assert losses[-1] < losses[0] / 4


def test_operators_on_variables(exe):
    a = layers.data("a", [2])
    b = layers.data("b", [1])
    outs = [a == b, a != a, 10 / a, a + 1.0, 2 - a]
    assert (a == None) is False and (a != "a") is True  # noqa: E711: not Variables: Python's own
    assert {a: 1}[a] == 1  # hashed by identity
    feed = {"a": np.array([[1, 2], [4, 5]], "float32"), "b": np.array([[2], [4]], "float32")}
    eq, ne, div, add, sub = exe.run(feed=feed, fetch_list=outs)
    np.testing.assert_array_equal(eq, [[False, True], [True, False]])
    assert not ne.any()
    np.testing.assert_allclose(div, 10 / feed["a"])
    np.testing.assert_allclose(add, feed["a"] + 1)
    np.testing.assert_allclose(sub, 2 - feed["a"])


def _adam_step(skip, global_beta_pow):
    """One adam op (Paddle 2.1's inputs: EpsilonTensor, SkipUpdate; use_global_beta_pow) on
    fixed values; returns ParamOut, Moment1Out, Moment2Out and whether Beta1PowOut was written."""
    rng = np.random.RandomState(1)
    values = {"Param": rng.uniform(-1, 1, (3, 4)), "Grad": rng.uniform(-1, 1, (3, 4)),
              "Moment1": rng.uniform(-1, 1, (3, 4)), "Moment2": rng.uniform(0, 1, (3, 4)),
              "LearningRate": np.array([0.1]), "Beta1Pow": np.array([0.9 ** 3]), "Beta2Pow": np.array([0.999 ** 3]),
              "EpsilonTensor": np.array([0.5]), "SkipUpdate": np.array([skip])}
    main = fluid.Program()
    block = main.global_block()
    for name, value in values.items():
        dtype = "bool" if value.dtype == np.bool_ else "float32"
        block.create_var(name=name, shape=list(value.shape), dtype=dtype, persistable=True)
        values[name] = value.astype(dtype)
    outputs = {"ParamOut": "Param", "Moment1Out": "Moment1", "Moment2Out": "Moment2", "Beta1PowOut": "b1_out",
               "Beta2PowOut": "b2_out"}
    for name in ("b1_out", "b2_out"):
        block.create_var(name=name, shape=[1], dtype="float32", persistable=True)
    block.append_op(type="adam", inputs={k: [k] for k in values}, outputs={k: [v] for k, v in outputs.items()},
                    attrs={"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "use_global_beta_pow": global_beta_pow})
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        fluid.Executor(fluid.CPUPlace()).run(main, feed=values)
        got = [np.array(scope.find_var(n).get_tensor()) for n in ("Param", "Moment1", "Moment2")]
        return got, scope.find_var("b1_out").is_initialized(), values


def test_adam_takes_paddles_epsilon_tensor_skip_update_and_global_beta_pow():
    (param, m1, m2), wrote_pow, v = _adam_step(skip=False, global_beta_pow=True)
    b1, b2 = 0.9, 0.999
    want_m1 = b1 * v["Moment1"] + (1 - b1) * v["Grad"]
    want_m2 = b2 * v["Moment2"] + (1 - b2) * v["Grad"] ** 2
    lr_t = 0.1 * np.sqrt(1 - v["Beta2Pow"][0]) / (1 - v["Beta1Pow"][0])
    np.testing.assert_allclose(m1, want_m1, rtol=1e-5)
    np.testing.assert_allclose(m2, want_m2, rtol=1e-5)
    np.testing.assert_allclose(param, v["Param"] - lr_t * want_m1 / (np.sqrt(want_m2) + 0.5), rtol=1e-5)  # epsilon 0.5
    assert not wrote_pow  # use_global_beta_pow: another op advances the powers
    (param, m1, m2), _, v = _adam_step(skip=True, global_beta_pow=False)
    for got, name in zip((param, m1, m2), ("Param", "Moment1", "Moment2")):
        np.testing.assert_array_equal(got, v[name])


def _adam_training(exe, **adam_args):
    """Three Adam steps of a two-layer fc net from constant weights: (final parameters, the
    beta-power variables in the program, the adam ops)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = layers.data("x", [3])
        w = fluid.ParamAttr(initializer=fluid.initializer.Constant(0.3))
        loss = layers.mean(layers.fc(layers.fc(x, size=4, act="tanh", param_attr=w), size=1, param_attr=w))
        opt = fluid.optimizer.Adam(learning_rate=0.1, beta1=0.7, **adam_args)
        opt.minimize(loss)
    scope = fluid.core.Scope()
    exe.run(startup, scope=scope)
    xs = np.random.RandomState(3).rand(5, 3).astype("float32")
    for _ in range(3):
        exe.run(main, feed={"x": xs}, scope=scope)
    params = [np.array(scope.find_var(p.name).get_tensor()) for p in main.global_block().all_parameters()]
    powers = [v.name for v in main.list_vars() if "beta" in v.name and "pow" in v.name]
    return params, powers, [op for op in main.global_block().ops if op.type == "adam"], opt


def test_adam_with_global_beta_powers_keeps_one_pair_for_all_parameters(exe):
    own, own_powers, _, _ = _adam_training(exe)
    shared, shared_powers, adams, opt = _adam_training(exe, use_global_beta_pow=True, flatten_param_grads=True)
    assert len(own_powers) == 2 * 4 and len(shared_powers) == 2 and len(adams) == 4
    assert all(op.input("Beta1Pow") == [opt._get_global_accumulator("beta1_pow_acc").name] for op in adams)
    assert all(op.attr("use_global_beta_pow") for op in adams)
    for a, b in zip(own, shared):
        np.testing.assert_array_equal(a, b)
    assert opt._flatten_param_grads is False  # accepted; each parameter is updated in place
    with pytest.raises(ValueError, match="global accumulator beta2_pow_acc already exists"):
        opt._add_global_accumulator("beta2_pow_acc")
    with pytest.raises(ValueError, match="global accumulator other does not exist"):
        opt._get_global_accumulator("other")


def test_backward_then_apply_gradients_is_minimize(exe):
    """Fluid 1.x's two halves of minimize: backward (the pairs), apply_gradients (the updates,
    in the current program); an fp64 network's Adam keeps fp64 state."""
    def build(split):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            x = layers.data("x", [3], dtype="float64")
            w = fluid.ParamAttr(name="w", initializer=fluid.initializer.Constant(0.2))
            loss = layers.mean(layers.fc(x, size=2, param_attr=w, bias_attr=False) ** 2)
            adam = fluid.optimizer.Adam(learning_rate=0.1)
            if split:
                pairs = adam.backward(loss)
                assert [p.name for p, _ in pairs] == ["w"]
                ops = adam.apply_gradients(pairs)
                assert "adam" in [op.type for op in ops]
            else:
                adam.minimize(loss)
        assert all(v.dtype == fluid.core.VarDesc.VarType.FP64 for v in adam._state_vars())
        scope = fluid.core.Scope()
        exe.run(startup, scope=scope)
        for _ in range(2):
            exe.run(main, feed={"x": np.arange(6, dtype="float64").reshape(2, 3)}, scope=scope)
        return np.array(scope.find_var("w").get_tensor())
    np.testing.assert_array_equal(build(True), build(False))
