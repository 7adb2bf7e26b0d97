"""Paddle 1.8+'s gradient clips: a clip called on [(param, grad)] (an optimizer's grad_clip),
need_clip, the optimizer's clip winning over the parameters' own, parameter groups each
with their own global norm, and a sparse gradient clipped as its dense one."""
import warnings

import numpy as np
import pytest

import rill.fluid as fluid
import rill.paddle as paddle
from rill.fluid import layers

RNG = np.random.RandomState(2)
IDS = np.array([[3], [1], [3], [7]], np.int64)


def _embedding_step(exe, sparse, clip_norm):
    """One SGD step of mean(embedding(IDS) . v) under a global-norm clip; (the table
    before, after, the unclipped dense gradient)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = layers.data("ids", [1], dtype="int64")
        emb = layers.embedding(ids, size=[10, 4], is_sparse=sparse,
                               param_attr=fluid.ParamAttr(name="table",
                                                          initializer=fluid.initializer.Constant(0.5)))
        v = layers.assign(np.array([[3.0, -4.0, 12.0, 1.0]], "float32"))
        loss = layers.mean(layers.reduce_sum(layers.elementwise_mul(emb, v), dim=1) * 10.0)
        clip = fluid.clip.ClipGradByGlobalNorm(clip_norm)
        fluid.optimizer.SGD(learning_rate=1.0, grad_clip=clip).minimize(loss)
    scope = fluid.core.Scope()
    exe.run(startup, scope=scope)
    before = np.array(scope.find_var("table").get_tensor())
    exe.run(main, feed={"ids": IDS}, scope=scope)
    after = np.array(scope.find_var("table").get_tensor())
    dense = np.zeros((10, 4), "float32")
    for i in IDS[:, 0]:
        dense[i] += np.array([3.0, -4.0, 12.0, 1.0]) * 10.0 / len(IDS)
    return before, after, dense


def test_a_sparse_gradient_is_clipped_by_its_dense_gradients_global_norm(exe):
    for sparse in (False, True):
        before, after, dense = _embedding_step(exe, sparse, clip_norm=2.0)
        norm = np.linalg.norm(dense)
        assert norm > 2.0
        np.testing.assert_allclose(before - after, dense * 2.0 / norm, rtol=1e-5, atol=1e-7)


def test_merge_selected_rows_and_its_value_tensor(exe):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = layers.data("ids", [1], dtype="int64")
        emb = layers.embedding(ids, size=[10, 2], is_sparse=True,
                               param_attr=fluid.ParamAttr(name="t", initializer=fluid.initializer.Constant(1.0)))
        grads = fluid.backward.append_backward(layers.mean(emb))
        sparse = dict((p.name, g) for p, g in grads)["t"]
        merged = layers.merge_selected_rows(sparse)
        values = layers.get_tensor_from_selected_rows(merged)
        raw = layers.get_tensor_from_selected_rows(sparse)
    scope = fluid.core.Scope()
    exe.run(startup, scope=scope)
    got_values, got_raw = exe.run(main, feed={"ids": IDS}, fetch_list=[values, raw], scope=scope)
    # rows 1, 3, 7 in order, 3 looked up twice
    np.testing.assert_allclose(got_values, [[1 / 8, 1 / 8], [2 / 8, 2 / 8], [1 / 8, 1 / 8]], rtol=1e-6)
    assert got_raw.shape[1] == 2 and got_raw.sum() == pytest.approx(1.0)
    with pytest.raises(TypeError, match="must be SelectedRows"):
        layers.get_tensor_from_selected_rows(emb)


W1, W2, XS = RNG.randn(3, 4).astype("float32"), RNG.randn(4, 1).astype("float32"), RNG.rand(4, 3).astype("float32")


def _two_layer_net():
    x = layers.data("x", [3])
    h = layers.fc(x, size=4, bias_attr=False,
                  param_attr=fluid.ParamAttr(name="w1", initializer=fluid.initializer.NumpyArrayInitializer(W1)))
    return layers.mean(layers.fc(h, size=1, bias_attr=False, param_attr=fluid.ParamAttr(
        name="w2", initializer=fluid.initializer.NumpyArrayInitializer(W2))) * 50.0)


def _grads_after_clip(exe, make_optimizer, prepare=lambda: None):
    """The gradients the updates used: w - w' for an SGD rate of 1."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        loss = _two_layer_net()
        prepare()
        make_optimizer().minimize(loss)
    scope = fluid.core.Scope()
    exe.run(startup, scope=scope)
    before = {n: np.array(scope.find_var(n).get_tensor()) for n in ("w1", "w2")}
    exe.run(main, feed={"x": XS}, scope=scope)
    return {n: before[n] - np.array(scope.find_var(n).get_tensor()) for n in ("w1", "w2")}


def test_the_optimizers_clip_wins_over_the_parameters_own_and_need_clip_exempts(exe):
    plain = _grads_after_clip(exe, lambda: fluid.optimizer.SGD(1.0))
    assert min(np.abs(g).max() for g in plain.values()) > 0.05

    def own_clips():
        fluid.clip.set_gradient_clip(fluid.clip.GradientClipByValue(0.01))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clipped = _grads_after_clip(exe, lambda: fluid.optimizer.SGD(1.0, grad_clip=fluid.clip.ClipGradByValue(0.05)),
                                    own_clips)
    assert any("grad_clip is used" in str(w.message) for w in caught)
    for n in plain:
        np.testing.assert_allclose(clipped[n], np.clip(plain[n], -0.05, 0.05), rtol=1e-5)

    def w2_exempt():
        fluid.default_main_program().global_block().var("w2").need_clip = False
    exempt = _grads_after_clip(exe, lambda: fluid.optimizer.SGD(1.0, grad_clip=fluid.clip.ClipGradByNorm(0.1)),
                               w2_exempt)
    np.testing.assert_allclose(exempt["w2"], plain["w2"], rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(exempt["w1"]), 0.1, rtol=1e-5)
    with pytest.raises(TypeError, match="grad_clip should be"):
        fluid.optimizer.SGD(1.0, grad_clip=0.5)


def test_each_parameter_group_is_clipped_by_its_own_global_norm():
    xs = RNG.rand(4, 3).astype("float32")
    with fluid.dygraph.guard():
        first, second = paddle.nn.Linear(3, 4), paddle.nn.Linear(4, 1)
        params = first.parameters() + second.parameters()
        loss = paddle.mean(second(first(paddle.to_tensor(xs))) * 50.0)
        loss.backward()
        grads = [p.gradient() for p in params]
        before = [p.numpy() for p in params]
        sgd = paddle.optimizer.SGD(1.0, parameters=[
            {"params": first.parameters()},
            {"params": second.parameters(), "grad_clip": paddle.nn.ClipGradByGlobalNorm(0.2)}],
            grad_clip=paddle.nn.ClipGradByGlobalNorm(0.1))
        sgd.step()
        steps = [b - p.numpy() for b, p in zip(before, params)]
    for group, norm in ((slice(0, 2), 0.1), (slice(2, 4), 0.2)):
        unclipped = np.sqrt(sum((g ** 2).sum() for g in grads[group]))
        assert unclipped > norm
        for step, g, b in zip(steps[group], grads[group], before[group]):
            # A step is a difference of two float32 parameters, so it is only
            # known to within a rounding of the larger of them; the parameters'
            # initial values are random, so the bound follows them.
            np.testing.assert_allclose(step, g * norm / unclipped, rtol=1e-5,
                                       atol=2 * np.spacing(np.abs(b)).max())
