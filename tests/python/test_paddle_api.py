"""rill.paddle, Paddle 2.x's static API: values against numpy, Paddle's argument errors,
and the programs it builds (the ops and attributes Paddle's functions append)."""
import numpy as np
import pytest

import rill
import rill.fluid as fluid
import rill.paddle as paddle
import rill.paddle.nn.functional as F

RNG = np.random.RandomState(0)


def run(exe, feed, fetch):
    exe.run(fluid.default_startup_program())
    return exe.run(feed=feed, fetch_list=fetch)


def test_comparisons_broadcast_both_ways_and_take_the_name(exe):
    x = paddle.static.data("x", [5], "int32")
    y = paddle.static.data("y", [3, 1], "int32")
    outs = [paddle.less_than(x, y), paddle.greater_equal(y, x), paddle.equal(x, y, name="name_equal")]
    xs, ys = np.arange(5, dtype="int32"), np.array([[5], [3], [2]], "int32")
    got = run(exe, {"x": xs, "y": ys}, outs)
    np.testing.assert_array_equal(got[0], xs < ys)
    np.testing.assert_array_equal(got[1], ys >= xs)
    np.testing.assert_array_equal(got[2], xs == ys)
    assert "name_equal" in outs[2].name and outs[0].stop_gradient
    with pytest.raises(TypeError, match="'y' in equal"):
        paddle.equal(x, 1)


def test_arithmetic_and_reductions(exe):
    x = paddle.static.data("x", [2, 3, 4], "float32")
    b = paddle.static.data("b", [3, 1], "float32")
    i = paddle.static.data("i", [2, 3], "int32")
    outs = [paddle.add(x, b), paddle.divide(x, b), paddle.pow(x, 2), paddle.pow(paddle.abs(x), b), paddle.sum(x),
            paddle.sum(x, axis=[0, 2], keepdim=True), paddle.mean(x, axis=-1), paddle.sum(i, axis=1, dtype="int64"),
            paddle.clip(x, min=-0.5), paddle.scale(x, 2.0, 1.0, bias_after_scale=False), paddle.cumsum(x, axis=1),
            paddle.cumsum(i), paddle.all(paddle.greater_than(i, paddle.full([1], 0, "int32")), axis=0),
            paddle.add_n([x, x, x]), paddle.stanh(x, 0.5, 2.0)]
    xs = RNG.randn(2, 3, 4).astype("float32")
    bs = RNG.rand(3, 1).astype("float32") + 0.5
    is_ = RNG.randint(-3, 4, (2, 3)).astype("int32")
    got = run(exe, {"x": xs, "b": bs, "i": is_}, outs)
    want = [xs + bs, xs / bs, xs ** 2, np.abs(xs) ** bs, xs.sum(), xs.sum(axis=(0, 2), keepdims=True), xs.mean(axis=-1),
            is_.sum(axis=1), np.maximum(xs, -0.5), 2 * (xs + 1), np.cumsum(xs, axis=1), np.cumsum(is_),
            (is_ > 0).all(axis=0), 3 * xs, 2.0 * np.tanh(0.5 * xs)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    assert got[7].dtype == np.int64 and outs[5].shape == (1, 3, 1)
    with pytest.raises(ValueError, match="data type overflows"):
        paddle.sum(paddle.static.data("d", [3], "float64"), dtype="float32")


def test_manipulation(exe):
    x = paddle.static.data("x", [2, 3, 4], "float32")
    idx = paddle.static.data("idx", [2], "int64")
    parts = paddle.split(x, [1, -1], axis=1)
    outs = parts + [paddle.flatten(x, 1, 2), paddle.gather(x, idx, axis=2), paddle.index_select(x, idx, axis=1),
                    paddle.roll(x, 1), paddle.roll(x, [1, -1], [0, 2]), paddle.flip(x, [0, 2]),
                    paddle.tile(x, [2, 1, 1]), paddle.expand(paddle.sum(x, axis=0, keepdim=True), [3, 3, 4]),
                    paddle.unsqueeze(x, [0, 4]), paddle.t(paddle.sum(x, axis=0)), paddle.transpose(x, [2, 0, 1]),
                    paddle.concat([x, x], axis=-1), paddle.stack([x, x], axis=1)]
    xs = RNG.randn(2, 3, 4).astype("float32")
    ids = np.array([2, 0], "int64")
    got = run(exe, {"x": xs, "idx": ids}, outs)
    want = [xs[:, :1], xs[:, 1:], xs.reshape(2, 12), xs[:, :, ids], xs[:, ids], np.roll(xs, 1),
            np.roll(xs, [1, -1], [0, 2]), xs[::-1, :, ::-1], np.tile(xs, [2, 1, 1]),
            np.broadcast_to(xs.sum(0, keepdims=True), (3, 3, 4)), xs[None, :, :, :, None], xs.sum(0).T,
            xs.transpose(2, 0, 1), np.concatenate([xs, xs], -1), np.stack([xs, xs], 1)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert parts[1].shape == (2, 2, 4) and outs[2].shape == (2, 12)
    with pytest.raises(ValueError, match="stop_axis"):
        paddle.flatten(x, 2, 1)
    with pytest.raises(ValueError, match="out of range"):
        paddle.roll(x, 1, axis=3)


def test_bitwise_ops_broadcast_and_write_into_a_given_output(exe):
    x = paddle.static.data("x", [4], "int64")
    y = paddle.static.data("y", [3, 1], "int64")
    given = paddle.static.data("given", [4], "int64")
    outs = [paddle.bitwise_and(x, y), paddle.bitwise_or(x, y), paddle.bitwise_xor(x, y),
            paddle.bitwise_not(x, out=given)]
    xs, ys = np.array([5, -6, 1 << 40, 0], "int64"), np.array([[3], [-1], [1 << 40]], "int64")
    got = run(exe, {"x": xs, "y": ys, "given": np.zeros(4, "int64")}, outs)
    for g, w in zip(got, [xs & ys, xs | ys, xs ^ ys, ~xs]):
        np.testing.assert_array_equal(g, w)
    assert outs[3] is given
    with pytest.raises(TypeError, match="bitwise_and"):
        paddle.bitwise_and(paddle.static.data("real", [4], "float32"), x)


def test_gather_nd_and_scatter_nd_read_and_add_the_slices_index_rows_name(exe):
    x = paddle.static.data("x", [2, 3, 4], "float32")
    index = paddle.static.data("index", [5, 2], "int64")
    updates = paddle.static.data("updates", [5, 4], "float32")
    outs = [paddle.gather_nd(x, index), paddle.scatter_nd_add(x, index, updates),
            paddle.scatter_nd(index, updates, [2, 3, 4])]
    xs, us = RNG.randn(2, 3, 4).astype("float32"), RNG.randn(5, 4).astype("float32")
    ids = np.array([[1, 2], [0, 0], [1, 2], [0, 1], [1, 0]], "int64")  # (1, 2) twice: both added
    got = run(exe, {"x": xs, "index": ids, "updates": us}, outs)
    added, zeros = xs.copy(), np.zeros_like(xs)
    for (i, j), u in zip(ids, us):
        added[i, j] += u
        zeros[i, j] += u
    np.testing.assert_array_equal(got[0], xs[ids[:, 0], ids[:, 1]])
    np.testing.assert_allclose(got[1], added, rtol=1e-6)
    np.testing.assert_allclose(got[2], zeros, rtol=1e-6)
    assert outs[0].shape == (5, 4) and outs[2].shape == (2, 3, 4)
    with pytest.raises(ValueError, match="Updates has wrong shape"):
        paddle.scatter_nd_add(x, index, paddle.static.data("three", [5, 3], "float32"))
    with pytest.raises(ValueError, match="no greater than Input.X..rank"):
        paddle.gather_nd(x, paddle.static.data("long", [5, 4], "int64"))
    with pytest.raises(TypeError, match="index"):
        paddle.gather_nd(x, paddle.static.data("real", [5, 2], "float32"))


def test_where_broadcasts_keeping_infinities(exe):
    c = paddle.static.data("c", [3, 1], "bool")
    x = paddle.static.data("x", [1, 4], "float32")
    y = paddle.static.data("y", [4], "float32")
    out = paddle.where(c, x, y)
    cs = np.array([[True], [False], [True]])
    xs = np.array([[1, np.inf, -np.inf, 2]], "float32")
    ys = np.array([np.nan, 5, 6, np.inf], "float32")
    got, = run(exe, {"c": cs, "x": xs, "y": ys}, [out])
    np.testing.assert_array_equal(got, np.where(cs, xs, ys))


def test_activations_and_their_layers(exe):
    x = paddle.static.data("x", [4, 6], "float32")
    cases = [(F.relu, lambda v: np.maximum(v, 0)), (F.leaky_relu, lambda v: np.where(v > 0, v, 0.01 * v)),
             (F.hardtanh, lambda v: np.clip(v, -1, 1)), (F.relu6, lambda v: np.clip(v, 0, 6)),
             (F.softsign, lambda v: v / (1 + np.abs(v))), (F.log_sigmoid, lambda v: -np.log1p(np.exp(-v))),
             (F.hardshrink, lambda v: np.where(np.abs(v) > 0.5, v, 0)), (F.silu, lambda v: v / (1 + np.exp(-v))),
             (F.softmax, lambda v: np.exp(v) / np.exp(v).sum(-1, keepdims=True)),
             (F.log_softmax, lambda v: v - np.log(np.exp(v).sum(-1, keepdims=True)))]
    outs = [f(x) for f, _ in cases] + [paddle.nn.LeakyReLU(0.2)(x), paddle.nn.Hardtanh(-0.5, 0.5)(x)]
    xs = RNG.randn(4, 6).astype("float32") * 3
    got = run(exe, {"x": xs}, outs)
    for g, (_, ref) in zip(got, cases):
        np.testing.assert_allclose(g, ref(xs), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[-2], np.where(xs > 0, xs, 0.2 * xs), rtol=1e-6)
    np.testing.assert_allclose(got[-1], np.clip(xs, -0.5, 0.5), rtol=1e-6)
    with pytest.raises(TypeError, match="'x' in relu"):
        F.relu(paddle.static.data("i", [3], "int32"))
    with pytest.raises(TypeError, match="'x' in relu"):
        F.relu(1)
    with pytest.raises(ValueError, match="scale must be greater than 1.0"):
        F.selu(x, scale=0.5)


def test_pad_every_dim_and_spatial_dims(exe):
    x = paddle.static.data("x", [1, 2, 3, 4], "float32")
    l3 = paddle.static.data("l3", [1, 2, 5], "float32")
    outs = [F.pad(x, [1, 0, 0, 1, 2, 2, 0, 3], value=7.0), F.pad(x, [1, 2, 0, 1], mode="reflect"),
            F.pad(x, [1, 1, 2, 0], mode="replicate", data_format="NHWC"), paddle.nn.Pad1D(7, mode="circular")(l3)]
    xs = RNG.randn(1, 2, 3, 4).astype("float32")
    ls = RNG.randn(1, 2, 5).astype("float32")
    got = run(exe, {"x": xs, "l3": ls}, outs)
    np.testing.assert_array_equal(got[0], np.pad(xs, [(1, 0), (0, 1), (2, 2), (0, 3)], constant_values=7))
    np.testing.assert_array_equal(got[1], np.pad(xs, [(0, 0), (0, 0), (0, 1), (1, 2)], mode="reflect"))
    np.testing.assert_array_equal(got[2], np.pad(xs, [(0, 0), (2, 0), (1, 1), (0, 0)], mode="edge"))
    np.testing.assert_array_equal(got[3], np.pad(ls, [(0, 0), (0, 0), (7, 7)], mode="wrap"))


def test_dropout_modes(exe):
    x = paddle.static.data("x", [200, 50], "float32")
    train = F.dropout(x, 0.3)
    infer = F.dropout(x, 0.3, training=False, mode="downscale_in_infer")
    rows = F.dropout(x, 0.5, axis=0)
    xs = np.ones((200, 50), "float32")
    got = run(exe, {"x": xs}, [train, infer, rows])
    assert set(np.unique(got[0])) <= {0.0, np.float32(1 / 0.7)} and 0.2 < (got[0] == 0).mean() < 0.4
    np.testing.assert_allclose(got[1], 0.7 * xs)
    assert all(len(set(r)) == 1 for r in got[2]) and set(np.unique(got[2])) == {0.0, 2.0}
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(x, 1.5)


def test_linear_and_embedding_layers(exe):
    x = paddle.static.data("x", [3, 4], "float32")
    ids = paddle.static.data("ids", [2, 2], "int64")
    linear = paddle.nn.Linear(4, 5, bias_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.5)))
    embedding = paddle.nn.Embedding(10, 3, padding_idx=0)
    y, e = linear(x), embedding(ids)
    xs = RNG.randn(3, 4).astype("float32")
    idv = np.array([[0, 3], [9, 3]], "int64")
    got = run(exe, {"x": xs, "ids": idv}, [y, e, linear.weight, embedding.weight])
    np.testing.assert_allclose(got[0], xs @ got[2] + 0.5, rtol=1e-5, atol=1e-6)
    want = got[3][idv]
    want[idv == 0] = 0
    np.testing.assert_array_equal(got[1], want)
    assert len(linear.parameters()) == 2 and paddle.nn.Linear(4, 5, bias_attr=False).bias is None


def test_a_feed_may_leave_off_trailing_dims_of_one(exe):
    x = paddle.static.data("x", [3, 1], "bool")
    y = paddle.static.data("y", [-1, 3], "bool")
    out = paddle.greater_than(x, paddle.static.data("z", [1], "bool"))
    xs = np.array([True, False, True])
    got, = run(exe, {"x": xs, "z": np.array([False])}, [out])
    np.testing.assert_array_equal(got, xs > False)
    with pytest.raises(rill.Error, match=r"declares bool \[-1, 3\], the value fed is bool \[3\]"):
        exe.run(feed={"x": xs, "y": xs, "z": np.array([False])}, fetch_list=[out])


def test_pow_of_integers(exe):
    x = paddle.static.data("x", [5], "int64")
    y = paddle.static.data("y", [5], "int32")
    xs = np.array([0, 1, -3, 7, 3], "int64")
    got = run(exe, {"x": xs, "y": xs.astype("int32")}, [paddle.pow(x, 3), paddle.pow(x, 0), paddle.pow(y, 2)])
    np.testing.assert_array_equal(got[0], xs ** 3)
    np.testing.assert_array_equal(got[1], np.ones(5))
    np.testing.assert_array_equal(got[2], xs.astype("int32") ** 2)
    assert got[0].dtype == np.int64 and got[2].dtype == np.int32
    with pytest.raises(Exception, match="factor of 0 or more"):
        run(exe, {"x": xs, "y": xs.astype("int32")}, [paddle.pow(x, -1)])


def test_clip_of_integers(exe):
    i = paddle.static.data("i", [5], "int64")
    out = paddle.clip(i, min=-1.5, max=2.7)
    got, = run(exe, {"i": np.arange(-3, 2, dtype="int64") * 2}, [out])
    np.testing.assert_array_equal(got, np.clip(np.arange(-3, 2) * 2, -1, 2))


def test_an_optimizer_updates_the_parameters_it_was_given(exe):
    x = paddle.static.data("x", [2, 4], "float32")
    first, second = paddle.nn.Linear(4, 3), paddle.nn.Linear(3, 1)
    loss = paddle.mean(second(first(x)))
    fluid.optimizer.SGD(learning_rate=0.5, parameter_list=second.parameters()).minimize(loss)
    exe.run(fluid.default_startup_program())
    scope = fluid.global_scope()
    before = {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in first.parameters() + second.parameters()}
    exe.run(feed={"x": np.ones((2, 4), "float32")}, fetch_list=[loss])
    for p in first.parameters():
        np.testing.assert_array_equal(np.array(scope.find_var(p.name).get_tensor()), before[p.name])
    assert not np.array_equal(np.array(scope.find_var(second.weight.name).get_tensor()), before[second.weight.name])


def test_paddle_optimizers(exe):
    x = paddle.static.data("x", [2, 4], "float32")
    linear = paddle.nn.Linear(4, 1)
    loss = paddle.mean(linear(x))
    beta1 = fluid.layers.create_global_var(shape=[1], value=0.5, dtype="float32", persistable=True)
    paddle.optimizer.Momentum(0.1, weight_decay=0.5).minimize(loss)
    momentum_ops = [op for op in fluid.default_main_program().global_block().ops if op.type == "momentum"]
    assert [op.attr("regularization_method") for op in momentum_ops] == ["l2_decay"] * 2
    assert not any(op.type in ("scale", "sum") for op in fluid.default_main_program().global_block().ops)
    with pytest.raises(ValueError, match="beta2"):
        paddle.optimizer.Adam(0.1, beta2=1.5)
    with pytest.raises(TypeError, match="learning rate"):
        paddle.optimizer.SGD(learning_rate=beta1)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = paddle.static.data("x", [2, 4], "float32")
        loss = paddle.mean(paddle.nn.Linear(4, 1)(x))
        beta1 = fluid.layers.create_global_var(shape=[1], value=0.5, dtype="float32", persistable=True)
        paddle.optimizer.Adam(0.01, beta1=beta1).minimize(loss)
    exe.run(startup)
    before = exe.run(main, feed={"x": np.ones((2, 4), "float32")}, fetch_list=[loss])[0]
    after = exe.run(main, feed={"x": np.ones((2, 4), "float32")}, fetch_list=[loss])[0]
    assert after < before
    adam = [op for op in main.global_block().ops if op.type == "adam"][0]
    assert adam.input("Beta1Tensor") == [beta1.name]


def _conv_reference(xs, w, pad, groups=1):
    """A grouped NCHW convolution, stride 1, in numpy."""
    xs = np.pad(xs, [(0, 0), (0, 0), (pad, pad), (pad, pad)])
    windows = np.lib.stride_tricks.sliding_window_view(xs, w.shape[2:], axis=(2, 3))  # N C H W kh kw
    per = w.shape[0] // groups
    outs = [np.einsum("nchwij,ocij->nohw", windows[:, g * w.shape[1]:(g + 1) * w.shape[1]],
                      w[g * per:(g + 1) * per]) for g in range(groups)]
    return np.concatenate(outs, axis=1)


def test_conv_layers(exe):
    x = paddle.static.data("x", [2, 4, 6, 6], "float32")
    plain = paddle.nn.Conv2D(4, 6, 3, padding=1)
    depthwise = paddle.nn.Conv2D(4, 4, 3, groups=4, bias_attr=False)
    transposed = paddle.nn.Conv2DTranspose(4, 2, 3, stride=2)
    outs = [plain(x), depthwise(x), transposed(x)]
    xs = RNG.rand(2, 4, 6, 6).astype("float32")
    got = run(exe, {"x": xs}, outs + [plain.weight, plain.bias, depthwise.weight])
    np.testing.assert_allclose(got[0], _conv_reference(xs, got[3], 1) + got[4][:, None, None], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[1], _conv_reference(xs, got[5], 0, groups=4), rtol=1e-4, atol=1e-5)
    assert got[2].shape == (2, 2, 13, 13) and outs[0].shape == (2, 6, 6, 6)
    ops = [op.type for op in fluid.default_main_program().global_block().ops]
    assert "depthwise_conv2d" in ops and "conv2d_transpose" in ops


def test_yolo_box_iou_aware_weighs_objectness_against_the_iou_channels(exe):
    # With iou_aware the head carries one IoU channel per anchor in front; a factor of 0
    # leaves the confidence objectness alone, a factor of 1 makes it the IoU's sigmoid.
    anchors, classes = [10, 13, 16, 30], 2
    head = paddle.static.data("head", [2, 2 * (6 + classes), 4, 4], "float32")
    plain = paddle.static.data("plain", [2, 2 * (5 + classes), 4, 4], "float32")
    img = paddle.static.data("img", [2, 2], "int32")
    kw = dict(anchors=anchors, class_num=classes, conf_thresh=0.0, downsample_ratio=8)
    outs = [*paddle.vision.ops.yolo_box(head, img, iou_aware=True, iou_aware_factor=0.0, **kw),
            *paddle.vision.ops.yolo_box(plain, img, **kw),
            paddle.vision.ops.yolo_box(head, img, iou_aware=True, iou_aware_factor=1.0, **kw)[1]]
    hs = RNG.randn(2, 2 * (6 + classes), 4, 4).astype("float32")
    got = run(exe, {"head": hs, "plain": hs[:, 2:], "img": np.array([[64, 48], [32, 32]], "int32")}, outs)
    np.testing.assert_allclose(got[0], got[2], rtol=1e-6)
    np.testing.assert_allclose(got[1], got[3], rtol=1e-6)
    sigmoid = 1 / (1 + np.exp(-hs.astype(np.float64)))
    cells = hs[:, 2:].reshape(2, 2, 5 + classes, 4, 4)
    iou = sigmoid[:, :2].reshape(2, 2, 1, 4, 4)
    class_prob = 1 / (1 + np.exp(-cells[:, :, 5:].astype(np.float64)))
    want = (class_prob * iou).transpose(0, 1, 3, 4, 2).reshape(2, -1, classes)
    np.testing.assert_allclose(got[4], want, rtol=1e-5)


def test_interpolate(exe):
    x = paddle.static.data("x", [1, 2, 3, 4], "float32")
    size = paddle.static.data("size", [2], "int64")
    near = paddle.nn.functional.interpolate(x, scale_factor=2)
    bilinear = paddle.nn.functional.interpolate(x, size=[5, 7], mode="bilinear", align_corners=True)
    sized = paddle.nn.functional.interpolate(x, size=size, mode="nearest")
    ramp = (np.arange(3)[:, None] + 10.0 * np.arange(4)[None, :]).astype("float32")
    xs = np.stack([ramp, 2 * ramp])[None]
    got = run(exe, {"x": xs, "size": np.array([6, 8], "int64")}, [near, bilinear, sized])
    np.testing.assert_array_equal(got[0], xs.repeat(2, axis=2).repeat(2, axis=3))
    want = np.arange(5)[:, None] * 2 / 4 + 10.0 * np.arange(7)[None, :] * 3 / 6
    np.testing.assert_allclose(got[1], np.stack([want, 2 * want])[None], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[2], got[0])
    assert near.shape == (1, 2, 6, 8) and bilinear.shape == (1, 2, 5, 7)
    with pytest.raises(ValueError, match="align_corners"):
        paddle.nn.functional.interpolate(x, scale_factor=2, align_corners=True)


def test_local_response_norm(exe):
    x = paddle.static.data("x", [2, 6, 3, 4], "float32")
    last = paddle.static.data("last", [2, 3, 4, 6], "float32")
    outs = [paddle.nn.functional.local_response_norm(x, 5), paddle.nn.functional.local_response_norm(x, 4, k=2.0),
            paddle.nn.LocalResponseNorm(4, k=2.0, data_format="NHWC")(last)]
    xs = RNG.rand(2, 6, 3, 4).astype("float32")
    got = run(exe, {"x": xs, "last": xs.transpose(0, 2, 3, 1)}, outs)
    for g, size, k in ((got[0], 5, 1.0), (got[1], 4, 2.0)):
        padded = np.pad(xs ** 2, [(0, 0), (size // 2, (size - 1) // 2), (0, 0), (0, 0)])
        mean = np.stack([padded[:, c:c + size].sum(1) for c in range(6)], 1) / size
        np.testing.assert_allclose(g, xs / (k + 1e-4 * mean) ** 0.75, rtol=1e-5)
    np.testing.assert_allclose(got[2].transpose(0, 3, 1, 2), got[1], rtol=1e-6)


def test_lr_schedules():
    lr = paddle.optimizer.lr
    cosine = lr.CosineAnnealingDecay(0.1, T_max=4, eta_min=0.01)
    for epoch in range(1, 9):  # the recursive rate equals the closed form over a whole period
        cosine.step()
        np.testing.assert_allclose(cosine(), 0.01 + 0.09 * (1 + np.cos(np.pi * epoch / 4)) / 2, atol=1e-12)
    rates = {
        lr.StepDecay(1.0, step_size=2, gamma=0.5): [1, 1, 0.5, 0.5, 0.25],
        lr.MultiStepDecay(1.0, milestones=[1, 3], gamma=0.1): [1, 0.1, 0.1, 0.01, 0.01],
        lr.PiecewiseDecay([2, 3], [0.3, 0.2, 0.1]): [0.3, 0.3, 0.2, 0.1, 0.1],
        lr.LinearWarmup(lr.ExponentialDecay(1.0, 0.5), warmup_steps=2, start_lr=0, end_lr=1): [0, 0.5, 1, 0.5, 0.25],
        lr.PolynomialDecay(1.0, decay_steps=2, end_lr=0, cycle=True): [1, 0.5, 0, 0.25, 0],
    }
    for scheduler, expected in rates.items():
        got = []
        for _ in expected:
            got.append(scheduler())
            scheduler.step()
        np.testing.assert_allclose(got, expected, err_msg=type(scheduler).__name__)
    plateau = lr.ReduceOnPlateau(1.0, patience=1, factor=0.5)
    for metric in [3.0, 2.0, 2.5, 2.5]:  # improves, then two steps without improving
        plateau.step(metric)
    assert plateau() == 0.5
    restored = lr.StepDecay(1.0, step_size=2)
    restored.set_state_dict(list(rates)[0].state_dict())
    assert restored.last_epoch == 5
    with pytest.raises(TypeError, match="T_max"):
        lr.CosineAnnealingDecay(0.1, T_max=2.0)
    with pytest.raises(ValueError, match="one value more"):
        lr.PiecewiseDecay([1, 2], [0.1, 0.2])


def test_an_optimizer_follows_its_schedule(exe):
    """SGD on mean(x @ w): w's gradient is x's column mean, and each update is the rate the
    scheduler gave before that run times it."""
    x = paddle.static.data("x", [2, 3], "float32")
    linear = paddle.nn.Linear(3, 1, bias_attr=False)
    loss = paddle.mean(linear(x))
    scheduler = paddle.optimizer.lr.StepDecay(0.5, step_size=2, gamma=0.1)
    sgd = paddle.optimizer.SGD(learning_rate=scheduler)
    sgd.minimize(loss)
    exe.run(fluid.default_startup_program())
    xs = RNG.randn(2, 3).astype("float32")
    weight = lambda: np.array(fluid.global_scope().find_var(linear.weight.name).get_tensor())[:, 0]
    for rate in [0.5, 0.5, 0.05, 0.05]:
        assert sgd.get_lr() == pytest.approx(rate)
        before = weight()
        exe.run(feed={"x": xs}, fetch_list=[loss])
        np.testing.assert_allclose(before - weight(), rate * xs.mean(axis=0), atol=1e-6)
        scheduler.step()
    with pytest.raises(RuntimeError, match="LRScheduler"):
        sgd.set_lr(0.1)


def test_a_dygraph_optimizer_follows_its_schedule():
    xs = RNG.randn(2, 3).astype("float32")
    with fluid.dygraph.guard():
        linear = paddle.nn.Linear(3, 1, bias_attr=False)
        scheduler = paddle.optimizer.lr.PiecewiseDecay([1], [0.5, 0.1])
        sgd = paddle.optimizer.SGD(learning_rate=scheduler, parameters=linear.parameters())
        for rate in [0.5, 0.1]:
            before = linear.weight.numpy()[:, 0]
            paddle.mean(linear(paddle.to_tensor(xs))).backward()
            sgd.step()
            sgd.clear_grad()
            np.testing.assert_allclose(before - linear.weight.numpy()[:, 0], rate * xs.mean(axis=0), atol=1e-6)
            scheduler.step()
        assert sgd.state_dict()["LR_Scheduler"]["last_epoch"] == 2


def test_seed_repeats_a_programs_initial_parameters_each_drawn_apart():
    """paddle.seed, as Paddle's global generator: a program built again after the same seed
    starts from the same parameters; two parameters of one shape still differ; without a new
    seed the next build draws others."""
    def initial_parameters():
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            x = fluid.layers.data(name="x", shape=[4], dtype="float32")
            fluid.layers.fc(fluid.layers.fc(x, size=4), size=4)
        scope = fluid.Scope()
        with fluid.scope_guard(scope):
            fluid.Executor(fluid.CPUPlace()).run(startup)
            return [np.array(scope.find_var(p.name).get_tensor()) for p in main.global_block().all_parameters()
                    if p.name.endswith(".w_0")]

    paddle.seed(7)
    first = initial_parameters()
    again = initial_parameters()
    paddle.seed(7)
    repeated = initial_parameters()
    assert len(first) == 2 and first[0].shape == first[1].shape == (4, 4)
    for a, b in zip(first, repeated):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], first[1])
    assert not np.array_equal(first[0], again[0])


def test_a_parameters_own_rate_scales_the_global_one_in_one_op():
    """paddle.optimizer (Paddle 2.x): a parameter's learning_rate factor is one scale op of the
    global rate; its step moves the parameter by rate x factor x gradient."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        y = fluid.layers.fc(x, size=1, bias_attr=False,
                            param_attr=fluid.ParamAttr(name="w", learning_rate=1.5,
                                                       initializer=fluid.initializer.Constant(0.5)))
        loss = fluid.layers.reduce_sum(y)
        opts, _ = paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
    assert [op.type for op in opts] == ["scale", "sgd"]
    scope = fluid.Scope()
    xs = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "float32")
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        exe.run(main, feed={"x": xs})
        w = np.array(scope.find_var("w").get_tensor())
    np.testing.assert_allclose(w, 0.5 - 0.1 * 1.5 * xs.sum(axis=0, keepdims=True).T, rtol=1e-6)
