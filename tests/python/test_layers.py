"""fluid.layers run: each layer's values against numpy."""
import numpy as np
import pytest

import rill.fluid as fluid
from rill.fluid import layers

RNG = np.random.RandomState(0)


def run(exe, fetch, feed=None):
    exe.run(fluid.default_startup_program())
    return exe.run(feed=feed or {}, fetch_list=fetch)


def test_tensor_layers(exe):
    x = layers.data(name="x", shape=[2, 3], dtype="float32")
    outs = [
        layers.fill_constant(shape=[2, 2], dtype="int64", value=7),
        layers.zeros(shape=[3], dtype="float32"),
        layers.ones(shape=[1, 2], dtype="float64"),
        layers.cast(x, "int32"),
        layers.concat([x, x], axis=1),
        layers.assign(x),
        layers.sums([x, x, x]),
        layers.argmax(x, axis=2),
    ]
    a, b = layers.split(x, num_or_sections=[1, 2], dim=2)
    xs = RNG.randn(4, 2, 3).astype("float32") * 3
    got = run(exe, outs + [a, b], {"x": xs})
    np.testing.assert_array_equal(got[0], np.full((2, 2), 7, "int64"))
    np.testing.assert_array_equal(got[1], np.zeros(3, "float32"))
    assert got[2].dtype == np.float64 and got[2].tolist() == [[1.0, 1.0]]
    np.testing.assert_array_equal(got[3], xs.astype("int32"))
    np.testing.assert_array_equal(got[4], np.concatenate([xs, xs], axis=1))
    np.testing.assert_array_equal(got[5], xs)
    np.testing.assert_allclose(got[6], 3 * xs, rtol=1e-6)
    np.testing.assert_array_equal(got[7], np.argmax(xs, axis=2))
    np.testing.assert_array_equal(got[8], xs[:, :, :1])
    np.testing.assert_array_equal(got[9], xs[:, :, 1:])


def test_math_layers(exe):
    x = layers.data(name="x", shape=[3, 4], dtype="float32")
    y = layers.data(name="y", shape=[4], dtype="float32", append_batch_size=False)
    xs = RNG.rand(2, 3, 4).astype("float32") + 0.5
    ys = RNG.rand(4).astype("float32") + 0.5
    cases = [
        (layers.elementwise_add(x, y), xs + ys), (layers.elementwise_sub(x, y), xs - ys),
        (layers.elementwise_mul(x, y), xs * ys), (layers.elementwise_div(x, y), xs / ys),
        (layers.elementwise_max(x, y), np.maximum(xs, ys)), (layers.elementwise_min(x, y), np.minimum(xs, ys)),
        (layers.elementwise_pow(x, y), xs ** ys),
        (layers.elementwise_mod(layers.scale(x, scale=-7.0), y), np.mod(-7 * xs, ys)),
        (layers.elementwise_floordiv(layers.scale(x, scale=-7.0), y), np.floor_divide(-7 * xs, ys)),
        (layers.mean(x), [xs.mean()]), (layers.reduce_sum(x, dim=1), xs.sum(1)),
        (layers.reduce_mean(x, dim=[1, 2], keep_dim=True), xs.mean((1, 2), keepdims=True)),
        (layers.reduce_max(x), [xs.max()]), (layers.reduce_max(x, dim=-1), xs.max(-1)),
        (layers.scale(x, scale=2.0, bias=1.0), 2 * xs + 1), (layers.clip(x, min=0.7, max=1.2), np.clip(xs, 0.7, 1.2)),
        (layers.relu(layers.scale(x, bias=-1.0)), np.maximum(xs - 1, 0)),
        (layers.sigmoid(x), 1 / (1 + np.exp(-xs))), (layers.tanh(x), np.tanh(xs)), (layers.exp(x), np.exp(xs)),
        (layers.log(x), np.log(xs)), (layers.sqrt(x), np.sqrt(xs)), (layers.abs(x), np.abs(xs)),
        (layers.square(x), xs ** 2), (layers.softmax(x), np.exp(xs) / np.exp(xs).sum(-1, keepdims=True)),
        (layers.reshape(x, shape=[0, 12]), xs.reshape(2, 12)), (layers.transpose(x, perm=[0, 2, 1]),
                                                              xs.transpose(0, 2, 1)),
        (layers.matmul(x, x, transpose_y=True), xs @ xs.transpose(0, 2, 1)),
        (layers.relu6(layers.scale(x, scale=10.0)), np.clip(10 * xs, 0, 6)),
        (layers.leaky_relu(layers.scale(x, bias=-1.0), alpha=0.1), np.where(xs > 1, xs - 1, 0.1 * (xs - 1))),
    ]
    got = run(exe, [c[0] for c in cases], {"x": xs, "y": ys})
    for (var, want), value in zip(cases, got):
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6, err_msg=var.name)


def test_activation_layers(exe):
    x = layers.data(name="x", shape=[3, 4], dtype="float64")
    xs = RNG.randn(2, 3, 4) * 3
    pos = np.abs(xs) + 0.5
    p = layers.abs(x) + 0.5
    sig = 1 / (1 + np.exp(-xs))
    cases = [
        (layers.silu(x), xs * sig), (layers.logsigmoid(x), np.log(sig)), (layers.tanh_shrink(x), xs - np.tanh(xs)),
        (layers.softshrink(x, **{"lambda": 1.0}), np.where(xs > 1, xs - 1, np.where(xs < -1, xs + 1, 0))),
        (layers.hard_shrink(x, threshold=2), np.where(np.abs(xs) > 2, xs, 0)),
        (layers.thresholded_relu(x), np.where(xs > 1, xs, 0)), (layers.brelu(x, t_min=-1, t_max=2), np.clip(xs, -1, 2)),
        (layers.soft_relu(x, threshold=2.0), np.log1p(np.exp(np.clip(xs, -2, 2)))),
        (layers.elu(x, alpha=0.5), np.where(xs > 0, xs, 0.5 * np.expm1(xs))),
        (layers.softplus(x), np.log1p(np.exp(xs))), (layers.softsign(x), xs / (1 + np.abs(xs))),
        (layers.mish(x), xs * np.tanh(np.log1p(np.exp(xs)))),
        (layers.stanh(x, scale_a=0.5, scale_b=2), 2 * np.tanh(0.5 * xs)),
        (layers.pow(p, factor=2), pos ** 2), (layers.reciprocal(p), 1 / pos), (layers.rsqrt(p), pos ** -0.5),
        (layers.expm1(x), np.expm1(xs)), (layers.log1p(p), np.log1p(pos)), (layers.log2(p), np.log2(pos)),
        (layers.log10(p), np.log10(pos)), (layers.sin(x), np.sin(xs)), (layers.cos(x), np.cos(xs)),
        (layers.floor(x), np.floor(xs)), (layers.ceil(x), np.ceil(xs)), (layers.round(x), np.round(xs)),
    ]
    got = run(exe, [c[0] for c in cases], {"x": xs})
    for (var, want), value in zip(cases, got):
        np.testing.assert_allclose(value, want, rtol=1e-12, atol=1e-12, err_msg=var.name)


def test_indexing_and_made_tensor_layers(exe):
    x = layers.data(name="x", shape=[4, 3], dtype="float32", append_batch_size=False)
    idx = layers.data(name="idx", shape=[3], dtype="int64", append_batch_size=False)
    ids = layers.data(name="ids", shape=[1], dtype="int64")
    label = layers.data(name="label", shape=[4, 3], dtype="float32", append_batch_size=False)
    xs = RNG.randn(4, 3).astype("float32")
    labels = RNG.rand(4, 3).astype("float32")
    table = np.arange(12, dtype="int64").reshape(3, 4)
    outs = [
        layers.gather(x, idx), layers.one_hot(ids, depth=5), layers.cumsum(x, axis=0),
        layers.cumsum(x, exclusive=True, reverse=True), layers.argmin(x, axis=1), layers.shape(x),
        layers.fill_constant_batch_size_like(ids, shape=[-1, 2], dtype="float32", value=1.5),
        layers.range(0, 7, 2, "int64"), layers.assign(table), layers.assign(xs),
        layers.sigmoid_cross_entropy_with_logits(x, label),
        layers.assign(np.array([0.25])),  # one float64 value: a fill_constant
        layers.label_smooth(layers.one_hot(ids, depth=5), epsilon=0.1), layers.isfinite(x),
    ]
    got = run(exe, outs, {"x": xs, "idx": np.int64([2, 0, 2]), "ids": np.int64([[4], [0]]), "label": labels})
    np.testing.assert_array_equal(got[0], xs[[2, 0, 2]])
    np.testing.assert_array_equal(got[1], np.eye(5, dtype="float32")[[4, 0]])
    np.testing.assert_allclose(got[2], xs.cumsum(0), rtol=1e-6)
    np.testing.assert_allclose(got[3], xs[:, ::-1].cumsum(1)[:, ::-1] - xs, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[4], xs.argmin(1))
    assert got[5].dtype == np.int32 and got[5].tolist() == [4, 3]
    np.testing.assert_array_equal(got[6], np.full((2, 2), 1.5, "float32"))
    np.testing.assert_array_equal(got[7], [0, 2, 4, 6])
    assert got[8].dtype == np.int64
    np.testing.assert_array_equal(got[8], table)
    np.testing.assert_array_equal(got[9], xs)
    want = np.maximum(xs, 0) - xs * labels + np.log1p(np.exp(-np.abs(xs)))
    np.testing.assert_allclose(got[10], want, rtol=1e-5, atol=1e-6)
    assert got[11].tolist() == [0.25]
    np.testing.assert_allclose(got[12], 0.9 * np.eye(5)[[4, 0]] + 0.02, rtol=1e-6)
    assert got[13].tolist() == [True]
    img = layers.data(name="img", shape=[1, 2, 3], dtype="float32")
    padded = [layers.pad(x, paddings=[1, 0, 0, 2], pad_value=-1.0),
              layers.pad2d(img, paddings=[1, 0, 0, 2], mode="reflect"), layers.prelu(img, mode="channel"),
              layers.resize_bilinear(img, out_shape=[3, 5]), layers.resize_nearest(img, scale=2.0),
              layers.instance_norm(img), layers.group_norm(img, groups=1)]
    imgs = RNG.randn(2, 1, 2, 3).astype("float32")
    got = run(exe, padded, {"x": xs, "idx": np.int64([2, 0, 2]), "ids": np.int64([[4], [0]]), "label": labels,
                            "img": imgs})
    np.testing.assert_array_equal(got[0], np.pad(xs, ((1, 0), (0, 2)), constant_values=-1.0))
    np.testing.assert_array_equal(got[1], np.pad(imgs, ((0, 0), (0, 0), (1, 0), (0, 2)), mode="reflect"))
    np.testing.assert_allclose(got[2], np.where(imgs > 0, imgs, 0.25 * imgs), rtol=1e-6)
    # align_corners: the corners are the input's; nearest at scale 2 repeats each pixel twice.
    assert got[3].shape == (2, 1, 3, 5)
    np.testing.assert_allclose(got[3][:, :, [0, 0, -1, -1], [0, -1, 0, -1]], imgs[:, :, [0, 0, -1, -1], [0, -1, 0, -1]],
                               rtol=1e-6)
    np.testing.assert_allclose(got[3][:, :, 1, 2], imgs[:, :, :, 1].mean(-1), rtol=1e-5)
    np.testing.assert_array_equal(got[4][:, :, ::2, ::2], imgs)
    flat = imgs.reshape(2, -1)
    normalized = ((flat - flat.mean(1, keepdims=True)) / np.sqrt(flat.var(1, keepdims=True) + 1e-5)).reshape(imgs.shape)
    np.testing.assert_allclose(got[5], normalized, rtol=1e-4, atol=1e-5)  # one channel: both normalize the image
    np.testing.assert_allclose(got[6], normalized, rtol=1e-4, atol=1e-5)
    with pytest.raises(TypeError, match="float64"):
        layers.assign(np.zeros(3))


def test_comparisons_and_logic(exe):
    a = layers.data(name="a", shape=[3], dtype="int64", append_batch_size=False)
    b = layers.data(name="b", shape=[3], dtype="int64", append_batch_size=False)
    av, bv = np.array([1, 2, 3], "int64"), np.array([3, 2, 1], "int64")
    lt, le, gt = layers.less_than(a, b), layers.less_equal(a, b), layers.greater_than(a, b)
    cases = [(lt, av < bv), (le, av <= bv), (gt, av > bv), (layers.greater_equal(a, b), av >= bv),
             (layers.equal(a, b), av == bv), (layers.not_equal(a, b), av != bv),
             (layers.logical_and(lt, le), (av < bv) & (av <= bv)), (layers.logical_or(lt, gt), av != bv),
             (layers.logical_xor(lt, le), (av < bv) ^ (av <= bv)), (layers.logical_not(lt), ~(av < bv))]
    got = run(exe, [c[0] for c in cases], {"a": av, "b": bv})
    for (_, want), value in zip(cases, got):
        np.testing.assert_array_equal(value, want)


def test_while_and_increment_sum_below(exe):
    i = layers.fill_constant(shape=[1], dtype="int64", value=0)
    total = layers.fill_constant(shape=[1], dtype="int64", value=0)
    limit = layers.fill_constant(shape=[1], dtype="int64", value=10)
    cond = layers.less_than(i, limit)
    loop = fluid.While(cond=cond)
    with loop.block():
        layers.sums([total, i], out=total)
        layers.increment(i, in_place=True)
        layers.less_than(i, limit, cond=cond)
    got = run(exe, [total, i])
    assert [g.tolist() for g in got] == [[45], [10]]
    op = fluid.default_main_program().global_block().ops[-1]
    assert op.type == "while" and op.input("Condition") == [cond.name]
    with pytest.raises(TypeError, match="bool"):
        fluid.While(cond=i)


def test_conditional_block(exe):
    flag = layers.data(name="flag", shape=[1], dtype="bool", append_batch_size=False)
    out = layers.fill_constant(shape=[1], dtype="float32", value=0.0)
    cb = layers.ConditionalBlock([flag], is_scalar_condition=True)
    with cb.block():
        layers.fill_constant(shape=[1], dtype="float32", value=5.0, out=out)
    for given, want in ((True, 5.0), (False, 0.0)):
        got, = exe.run(feed={"flag": np.array([given])}, fetch_list=[out])
        assert got.tolist() == [want]


def test_switch_runs_the_first_case_that_holds(exe):
    x = layers.data(name="x", shape=[1], dtype="float32", append_batch_size=False)
    out = layers.fill_constant(shape=[1], dtype="float32", value=-1.0)
    with layers.Switch() as switch:
        with switch.case(layers.less_than(x, layers.fill_constant([1], "float32", 1.0))):
            layers.assign(layers.fill_constant([1], "float32", 10.0), out)
        with switch.case(layers.less_than(x, layers.fill_constant([1], "float32", 5.0))):
            layers.assign(layers.fill_constant([1], "float32", 20.0), out)
        with switch.default():
            layers.assign(layers.fill_constant([1], "float32", 30.0), out)
    for given, want in ((0.5, 10.0), (3.0, 20.0), (9.0, 30.0)):
        got, = exe.run(feed={"x": np.array([given], "float32")}, fetch_list=[out])
        assert got.tolist() == [want]
    with pytest.raises(ValueError, match="inside"):
        layers.Switch().case(layers.less_than(x, x))


def test_gradients_through_a_conditional_block(exe):
    x = layers.data(name="x", shape=[1])
    x.stop_gradient = False
    flag = layers.data(name="flag", shape=[1], dtype="bool", append_batch_size=False)
    out = layers.fill_constant_batch_size_like(x, shape=[-1, 3], dtype="float32", value=0.0)
    cb = layers.ConditionalBlock([flag], is_scalar_condition=True)
    with cb.block():
        h = layers.fc(x, size=3, param_attr=fluid.ParamAttr(name="w", initializer=fluid.initializer.Constant(2.0)),
                      bias_attr=False)
        layers.assign(layers.scale(h, 3.0), out)
    loss = layers.mean(out)
    params_grads = fluid.backward.append_backward(loss)
    assert [p.name for p, _ in params_grads] == ["w"]
    exe.run(fluid.default_startup_program())
    a = np.array([[1.0], [2.0]], "float32")
    # loss = mean(3 x w) over [2, 3]: d/dw_j = 3 * (1 + 2) / 6, d/dx_i = 3 * (2 + 2 + 2) / 6
    w_grad, x_grad = exe.run(feed={"x": a, "flag": np.array([True])}, fetch_list=["w@GRAD", "x@GRAD"])
    np.testing.assert_allclose(w_grad, [[1.5, 1.5, 1.5]])
    np.testing.assert_allclose(x_grad, [[3.0], [3.0]])
    w_grad, x_grad = exe.run(feed={"x": a, "flag": np.array([False])}, fetch_list=["w@GRAD", "x@GRAD"])
    assert not w_grad.any() and not x_grad.any()  # the block did not run: nothing flowed back


def test_print(exe, capfd):
    x = layers.fill_constant(shape=[2], dtype="float32", value=1.5)
    assert layers.Print(x, message="the value") is x
    run(exe, [x])
    out = capfd.readouterr().out
    assert "the value" in out and "1.5" in out


def test_dropout_batch_norm_layer_norm_and_embedding(exe):
    x = layers.data(name="x", shape=[4, 3, 3], dtype="float32")
    ids = layers.data(name="ids", shape=[1], dtype="int64")
    d = layers.dropout(x, dropout_prob=0.5, seed=1)
    d_test = layers.dropout(x, dropout_prob=0.5, is_test=True)
    bn = layers.batch_norm(x, epsilon=1e-5)
    ln = layers.layer_norm(x, begin_norm_axis=1)
    emb = layers.embedding(ids, size=[10, 4], param_attr=fluid.ParamAttr(
        name="emb", initializer=fluid.initializer.Uniform(-1, 1, seed=3)))
    xs = RNG.randn(2, 4, 3, 3).astype("float32")
    idv = np.array([[3], [7]], "int64")
    got = run(exe, [d, d_test, bn, ln, emb], {"x": xs, "ids": idv})
    kept = got[0] != 0
    np.testing.assert_allclose(got[0][kept], xs[kept], rtol=1e-6)  # Fluid's downgrade_in_infer: kept as is
    assert 0 < kept.mean() < 1
    np.testing.assert_allclose(got[1], xs * 0.5, rtol=1e-6)
    mu, var = xs.mean((0, 2, 3), keepdims=True), xs.var((0, 2, 3), keepdims=True)
    np.testing.assert_allclose(got[2], (xs - mu) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-5)
    flat = xs.reshape(2, -1)
    ln_want = (flat - flat.mean(1, keepdims=True)) / np.sqrt(flat.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(got[3], ln_want.reshape(xs.shape), rtol=1e-4, atol=1e-5)
    table = fluid.fetch_var("emb")
    np.testing.assert_array_equal(got[4], table[idv[:, 0]])


def test_momentum_training(exe):
    x = layers.data(name="x", shape=[3], dtype="float32")
    y = layers.data(name="y", shape=[1], dtype="float32")
    pred = layers.fc(input=x, size=1, bias_attr=False)
    loss = layers.mean(layers.square_error_cost(pred, y))
    fluid.optimizer.Momentum(learning_rate=0.05, momentum=0.9, use_nesterov=True).minimize(loss)
    op = [op for op in fluid.default_main_program().global_block().ops if op.type == "momentum"][0]
    assert op.attr("mu") == 0.9 and op.attr("use_nesterov") is True and op.input("Velocity") == ["velocity_0"]
    exe.run(fluid.default_startup_program())
    w = np.array([[1.0], [-2.0], [0.5]], "float32")
    for _ in range(200):
        xs = RNG.randn(16, 3).astype("float32")
        exe.run(feed={"x": xs, "y": xs @ w}, fetch_list=[loss])
    np.testing.assert_allclose(fluid.fetch_var("fc_0.w_0"), w, atol=1e-3)


@pytest.mark.parametrize("make, op_type", [
    (lambda: fluid.optimizer.Adagrad(learning_rate=0.2), "adagrad"),
    (lambda: fluid.optimizer.DecayedAdagrad(learning_rate=0.05), "decayed_adagrad"),
    (lambda: fluid.optimizer.RMSProp(learning_rate=0.01), "rmsprop"),
    (lambda: fluid.optimizer.RMSProp(learning_rate=0.01, momentum=0.5, centered=True), "rmsprop"),
    (lambda: fluid.optimizer.Adamax(learning_rate=0.05), "adamax"),
    (lambda: fluid.optimizer.Adadelta(learning_rate=1.0, rho=0.9, epsilon=1e-2), "adadelta"),
    (lambda: fluid.optimizer.Ftrl(learning_rate=0.5), "ftrl"),
])
def test_more_optimizers_fit_a_line(exe, make, op_type):
    x = layers.data(name="x", shape=[3], dtype="float32")
    y = layers.data(name="y", shape=[1], dtype="float32")
    pred = layers.fc(input=x, size=1, bias_attr=False)
    loss = layers.mean(layers.square_error_cost(pred, y))
    make().minimize(loss)
    assert [op.type for op in fluid.default_main_program().global_block().ops].count(op_type) == 1
    exe.run(fluid.default_startup_program())
    w = np.array([[1.0], [-2.0], [0.5]], "float32")
    rng = np.random.RandomState(1)
    losses = []
    for _ in range(300):
        xs = rng.randn(16, 3).astype("float32")
        losses.append(float(exe.run(feed={"x": xs, "y": xs @ w}, fetch_list=[loss])[0][0]))
    assert np.mean(losses[-20:]) < 0.05 * np.mean(losses[:20]), (losses[:3], losses[-3:])


def _one_sgd_step(exe, **optimizer_kwargs):
    """One SGD step (lr 0.1) of a bias-free fc from w = 1 on a fixed batch; returns the
    gradient numpy computes, and w before and after the step."""
    x = layers.data(name="x", shape=[3], dtype="float32")
    y = layers.data(name="y", shape=[1], dtype="float32")
    pred = layers.fc(input=x, size=1, bias_attr=False, param_attr=fluid.ParamAttr(
        name="w", initializer=fluid.initializer.Constant(1.0), **optimizer_kwargs.pop("param_attr", {})))
    loss = layers.mean(layers.square_error_cost(pred, y))
    fluid.optimizer.SGD(learning_rate=0.1, **optimizer_kwargs).minimize(loss)
    exe.run(fluid.default_startup_program())
    xs = np.array([[1, 2, 3], [-1, 0.5, 2]], "float32")
    ys = np.array([[10], [-4]], "float32")
    w0 = np.ones((3, 1), "float32")
    grad = 2 * xs.T @ (xs @ w0 - ys) / len(xs)
    exe.run(feed={"x": xs, "y": ys}, fetch_list=[loss])
    return grad, w0, fluid.fetch_var("w")


def test_l2_and_l1_decay_add_to_the_gradient(exe):
    grad, w0, w1 = _one_sgd_step(exe, regularization=fluid.regularizer.L2Decay(0.5))
    np.testing.assert_allclose(w1, w0 - 0.1 * (grad + 0.5 * w0), rtol=1e-5)
    ops = [op.type for op in fluid.default_main_program().global_block().ops]
    assert ops[-3:] == ["scale", "elementwise_add", "sgd"], ops  # Fluid 0.14's sequence


def test_a_parameters_own_regularizer_wins(exe):
    grad, w0, w1 = _one_sgd_step(exe, regularization=fluid.regularizer.L2Decay(0.5),
                                 param_attr={"regularizer": fluid.regularizer.L1Decay(0.25)})
    np.testing.assert_allclose(w1, w0 - 0.1 * (grad + 0.25 * np.sign(w0)), rtol=1e-5)


@pytest.mark.parametrize("clip, check", [
    (fluid.clip.GradientClipByValue(max=2.0), lambda g, step: np.clip(g, -2.0, 2.0)),
    (fluid.clip.GradientClipByNorm(clip_norm=1.5), lambda g, step: g * 1.5 / np.linalg.norm(g)),
    (fluid.clip.GradientClipByGlobalNorm(clip_norm=0.5), lambda g, step: g * 0.5 / np.linalg.norm(g)),
])
def test_gradient_clipping(exe, clip, check):
    grad, w0, w1 = _one_sgd_step(exe, param_attr={"gradient_clip": clip})
    assert np.linalg.norm(grad) > 2, "the batch's gradient is large enough to be clipped"
    np.testing.assert_allclose(w1, w0 - 0.1 * check(grad, None), rtol=1e-5)


def test_set_gradient_clip_and_a_bad_clip(exe):
    x = layers.data(name="x", shape=[3], dtype="float32")
    layers.fc(input=x, size=2)
    fluid.clip.set_gradient_clip(fluid.clip.GradientClipByValue(1.0))
    params = fluid.default_main_program().global_block().all_parameters()
    assert params and all(isinstance(p.gradient_clip_attr, fluid.clip.GradientClipByValue) for p in params)
    with pytest.raises(TypeError, match="GradientClip"):
        fluid.clip.set_gradient_clip(0.5)
    with pytest.raises(ValueError, match="min"):
        fluid.clip.GradientClipByValue(max=1.0, min=2.0)


def test_error_clipping_clips_a_gradient_before_the_rest_of_the_pass_reads_it(exe):
    x = layers.data(name="x", shape=[4], dtype="float32")
    hidden = layers.fc(input=x, size=3, bias_attr=False, param_attr=fluid.ParamAttr(name="w1"))
    out = layers.fc(input=hidden, size=1, bias_attr=False, param_attr=fluid.ParamAttr(name="w2"))
    loss = layers.mean(out)
    hidden.set_error_clip(fluid.clip.ErrorClipByValue(max=0.01, min=-0.02))
    grads = dict((p.name, g) for p, g in fluid.backward.append_backward(
        loss, callbacks=[fluid.clip.error_clip_callback]))
    exe.run(fluid.default_startup_program())
    xs = RNG.randn(5, 4).astype("float32")
    d_hidden, d_w1, w2 = exe.run(feed={"x": xs}, fetch_list=[hidden.name + "@GRAD", grads["w1"], "w2"])
    unclipped = np.tile(w2.T / 5.0, (5, 1))  # d mean(hidden @ w2) / d hidden
    np.testing.assert_allclose(d_hidden, np.clip(unclipped, -0.02, 0.01), rtol=1e-5)
    np.testing.assert_allclose(d_w1, xs.T @ np.clip(unclipped, -0.02, 0.01), rtol=1e-4, atol=1e-7)
    with pytest.raises(TypeError, match="BaseErrorClipAttr"):
        hidden.set_error_clip(0.5)
        fluid.backward.append_backward(loss, callbacks=[fluid.clip.error_clip_callback])


def test_parallel_do_runs_its_block_over_the_whole_batch(exe):
    x = layers.data(name="x", shape=[3], dtype="float32")
    places = layers.get_places(device_count=2)
    assert places.type == fluid.core.VarDesc.VarType.PLACE_LIST
    pd = layers.ParallelDo(places)
    with pytest.raises(ValueError, match="after its"):
        pd()
    with pd.do():
        x_ = pd.read_input(x)
        pd.write_output(layers.scale(x_, scale=2.0))
        pd.write_output(layers.mean(x_))
    doubled, mean = pd()
    xs = RNG.randn(4, 3).astype("float32")
    got = run(exe, [doubled, layers.mean(mean)], {"x": xs})
    np.testing.assert_allclose(got[0], 2 * xs, rtol=1e-6)
    np.testing.assert_allclose(got[1], [xs.mean()], rtol=1e-5)
    with pytest.raises(ValueError, match="inside"):
        pd.read_input(x)
    with pytest.raises(TypeError, match="get_places"):
        layers.ParallelDo(x)


def test_sparse_embedding_training(exe):
    ids = layers.data(name="ids", shape=[1], dtype="int64")
    target = layers.data(name="target", shape=[4], dtype="float32")
    emb = layers.embedding(ids, size=[20, 4], is_sparse=True, param_attr=fluid.ParamAttr(
        name="emb", initializer=fluid.initializer.Constant(0.0)))
    loss = layers.mean(layers.square_error_cost(emb, target))
    fluid.optimizer.SGD(learning_rate=1.0).minimize(loss)
    block = fluid.default_main_program().global_block()
    assert [op.type for op in block.ops].count("sgd") == 1
    assert block.var("emb@GRAD").type == fluid.core.VarDesc.VarType.SELECTED_ROWS
    exe.run(fluid.default_startup_program())
    idv = np.array([[2], [5]], "int64")
    want = np.array([[1, 2, 3, 4], [-1, -2, -3, -4]], "float32")
    for _ in range(60):
        exe.run(feed={"ids": idv, "target": want}, fetch_list=[loss])
    table = fluid.fetch_var("emb")
    np.testing.assert_allclose(table[[2, 5]], want, atol=1e-3)
    untouched = np.delete(table, [2, 5], axis=0)
    assert not untouched.any()  # only the looked-up rows were updated


def test_variable_operators(exe):
    x = layers.data(name="x", shape=[3], dtype="float32", append_batch_size=False)
    y = layers.data(name="y", shape=[3], dtype="float32", append_batch_size=False)
    xs, ys = np.array([1.0, 2.0, 4.0], "float32"), np.array([2.0, 2.0, 2.0], "float32")
    cases = [(x + y, xs + ys), (x - y, xs - ys), (x * y, xs * ys), (x / y, xs / ys), (x ** y, xs ** ys),
             (x + 1.5, xs + 1.5), (2 + x, 2 + xs), (x - 1, xs - 1), (10 - x, 10 - xs), (x * 3, xs * 3),
             (0.5 * x, 0.5 * xs), (x / 4, xs / 4), (x < y, xs < ys), (x >= y, xs >= ys)]
    got = run(exe, [c[0] for c in cases], {"x": xs, "y": ys})
    for (var, want), value in zip(cases, got):
        np.testing.assert_allclose(value, want, rtol=1e-6, err_msg=var.name)
    types = [op.type for op in fluid.default_main_program().global_block().ops]
    assert types.count("scale") == 7 and "less_than" in types and "elementwise_pow" in types


def test_crop_l2_normalize_lrn_and_maxout(exe):
    x = layers.data(name="x", shape=[6, 3, 4], dtype="float32")
    crop = layers.crop(x, shape=[-1, 2, 2, 3], offsets=[0, 1, 1, 0])
    normed = layers.l2_normalize(x, axis=1, epsilon=1e-12)
    lrn = layers.lrn(x, n=3, k=1.0, alpha=0.1, beta=0.75)
    maxout = layers.maxout(x, groups=3)
    assert maxout.shape == (-1, 2, 3, 4) and crop.shape == (-1, 2, 2, 3)
    xs = RNG.randn(2, 6, 3, 4).astype("float32")
    got = run(exe, [crop, normed, lrn, maxout], {"x": xs})
    np.testing.assert_array_equal(got[0], xs[:, 1:3, 1:3, 0:3])
    np.testing.assert_allclose(got[1], xs / np.sqrt((xs ** 2).sum(axis=1, keepdims=True) + 1e-12), rtol=1e-5)
    sq = np.pad(xs ** 2, ((0, 0), (1, 1), (0, 0), (0, 0)))
    mid = 1.0 + 0.1 * (sq[:, :-2] + sq[:, 1:-1] + sq[:, 2:])  # alpha not divided by n, as Paddle's
    np.testing.assert_allclose(got[2], xs * mid ** -0.75, rtol=1e-5)
    np.testing.assert_array_equal(got[3], xs.reshape(2, 2, 3, 3, 4).max(axis=2))


def test_a_crop_that_does_not_fit_names_the_shapes(exe):
    x = layers.data(name="x", shape=[3], dtype="float32")
    layers.crop(x, shape=[2, 2], offsets=[0, 2])
    with pytest.raises(fluid.core.EnforceNotMet, match=r"does not fit in X \[2, 3\]"):
        run(exe, [], {"x": np.zeros((2, 3), "float32")})


def test_multiplex_smooth_l1_and_mean_iou(exe):
    a = layers.data(name="a", shape=[3], dtype="float32")
    b = layers.data(name="b", shape=[3], dtype="float32")
    ids = layers.data(name="ids", shape=[1], dtype="int32")
    picked = layers.multiplex([a, b], ids)
    loss = layers.smooth_l1(a, b, sigma=2.0)
    pred = layers.data(name="pred", shape=[5], dtype="int64")
    label = layers.data(name="label", shape=[5], dtype="int64")
    miou, wrong, correct = layers.mean_iou(pred, label, num_classes=3)
    av, bv = RNG.randn(4, 3).astype("float32"), RNG.randn(4, 3).astype("float32")
    idv = np.array([[1], [0], [0], [1]], "int32")
    pv = np.array([[0, 1, 2, 2, 1]], "int64")
    lv = np.array([[0, 1, 1, 2, 0]], "int64")
    got = run(exe, [picked, loss, miou, wrong, correct],
              {"a": av, "b": bv, "ids": idv, "pred": pv, "label": lv})
    np.testing.assert_array_equal(got[0], np.where(idv == 1, bv, av))
    d = np.abs(av - bv)
    expect = np.where(d < 1 / 4.0, 0.5 * 4.0 * d ** 2, d - 0.5 / 4.0).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got[1], expect, rtol=1e-5)
    # a miss counts against its label's class and its prediction's: 2-for-1 and 1-for-0 make
    # class 0: 1 right, 1 wrong; 1: 1 right, 2 wrong; 2: 1 right, 1 wrong
    np.testing.assert_array_equal(got[4], [1, 1, 1])
    np.testing.assert_array_equal(got[3], [1, 2, 1])
    np.testing.assert_allclose(got[2], [(1 / 2 + 1 / 3 + 1 / 2) / 3], rtol=1e-6)


def test_roi_pool_and_polygon_box_transform(exe):
    x = layers.data(name="x", shape=[1, 4, 4], dtype="float32")
    rois = layers.data(name="rois", shape=[4], dtype="float32", lod_level=1)
    pooled = layers.roi_pool(x, rois, pooled_height=1, pooled_width=2)
    offsets = layers.data(name="offsets", shape=[2, 2, 3], dtype="float32")
    corners = layers.polygon_box_transform(offsets)
    xs = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)
    roi_tensor = fluid.create_lod_tensor(np.array([[0, 0, 3, 3], [1, 1, 2, 2]], "float32"), [[2]], fluid.CPUPlace())
    ov = RNG.randn(1, 2, 2, 3).astype("float32")
    got = run(exe, [pooled, corners], {"x": xs, "rois": roi_tensor, "offsets": ov})
    # the whole map in two halves across: maxima 13 and 15; the inner 2x2 (5, 6, 9, 10): 9 and 10
    np.testing.assert_array_equal(got[0].reshape(2, 2), [[13, 15], [9, 10]])
    w, h = np.meshgrid(np.arange(3), np.arange(2))
    np.testing.assert_allclose(got[1][0, 0], 4 * w - ov[0, 0], rtol=1e-6)
    np.testing.assert_allclose(got[1][0, 1], 4 * h - ov[0, 1], rtol=1e-6)


def test_bilinear_initializer_makes_an_upsampling_filter(exe):
    x = layers.data(name="x", shape=[1, 2, 2], dtype="float32")
    up = layers.conv2d_transpose(x, num_filters=1, filter_size=4, stride=2, padding=1, bias_attr=False,
                                 param_attr=fluid.ParamAttr(name="w", initializer=fluid.initializer.Bilinear()))
    got, = run(exe, [up], {"x": np.ones((1, 1, 2, 2), "float32")})
    ramp = np.array([0.25, 0.75, 0.75, 0.25], "float32")
    np.testing.assert_allclose(fluid.fetch_var("w")[0, 0], np.outer(ramp, ramp), rtol=1e-6)
    np.testing.assert_allclose(got[0, 0, 1:3, 1:3], np.ones((2, 2)), rtol=1e-6)  # a constant stays constant inside


@pytest.mark.parametrize("groups", [0, -2, 1.5, True])
def test_convolutions_refuse_groups_that_are_not_positive_ints(groups):
    x = layers.data(name="x", shape=[4, 8, 8], dtype="float32")
    for layer in (layers.conv2d, layers.conv2d_transpose):
        with pytest.raises(ValueError, match="%s: groups must be a positive int, got %r" % (layer.__name__, groups)):
            layer(x, num_filters=4, filter_size=3, groups=groups)


def test_adaptive_pool2d_with_and_without_its_index(exe):
    """Fluid 1.x's adaptive_pool2d: windows split H and W evenly (row i of 3 over 7 rows:
    floor(7 i / 3) up to ceil(7 (i + 1) / 3)); require_index also gives each maximum's
    index within its plane, which a gather of the plane reads back."""
    x = layers.data(name="x", shape=[3, 7, 5], dtype="float32")
    maxed, mask = layers.adaptive_pool2d(x, [3, 2], require_index=True)
    averaged = layers.adaptive_pool2d(x, [3, 2], pool_type="avg")
    assert maxed.shape == (-1, 3, 3, 2) and mask.shape == (-1, 3, 3, 2)
    xs = np.random.RandomState(5).randn(2, 3, 7, 5).astype("float32")
    got_max, got_mask, got_avg = run(exe, [maxed, mask, averaged], {"x": xs})
    assert got_mask.dtype == np.int32
    rows = [(7 * i // 3, -(-7 * (i + 1) // 3)) for i in range(3)]
    cols = [(5 * j // 2, -(-5 * (j + 1) // 2)) for j in range(2)]
    want_max = np.array([[[[xs[n, c, r0:r1, c0:c1].max() for c0, c1 in cols] for r0, r1 in rows]
                          for c in range(3)] for n in range(2)])
    want_avg = np.array([[[[xs[n, c, r0:r1, c0:c1].mean() for c0, c1 in cols] for r0, r1 in rows]
                          for c in range(3)] for n in range(2)])
    np.testing.assert_array_equal(got_max, want_max)
    np.testing.assert_allclose(got_avg, want_avg, rtol=1e-5, atol=1e-6)  # float32 sums in another order
    planes = xs.reshape(2, 3, 35)
    np.testing.assert_array_equal(np.take_along_axis(planes, got_mask.reshape(2, 3, 6), 2).reshape(got_max.shape),
                                  got_max)
    with pytest.raises(ValueError, match="require_index needs pool_type 'max'"):
        layers.adaptive_pool2d(x, 2, pool_type="avg", require_index=True)
