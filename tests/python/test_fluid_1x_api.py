"""Fluid 1.x's additions to the layers API, as Paddle's own tests use them: fluid.data,
create_lod_tensor, calc_gradient, attributes given as Variables, conv2d_transpose, and the
argument checks Fluid's layers make, while_loop."""
import numpy as np
import pytest

import rill.fluid as fluid
from rill.fluid import layers


def test_fluid_data_declares_the_whole_shape_and_checks_feeds(exe):
    x = fluid.data("x", [None, 3])
    assert x.shape == (-1, 3)
    y = layers.scale(x, 2.0)
    out, = exe.run(feed={"x": np.ones((5, 3), "float32")}, fetch_list=[y])
    assert out.shape == (5, 3)
    with pytest.raises(ValueError, match=r"feed 'x'.*fp32 \[2, 4\]"):
        exe.run(feed={"x": np.ones((2, 4), "float32")}, fetch_list=[y])
    with pytest.raises(ValueError, match=r"feed 'x'.*fp64 \[2, 3\]"):
        exe.run(feed={"x": np.ones((2, 3), "float64")}, fetch_list=[y])
    with pytest.raises(TypeError, match="name"):
        fluid.data(3, [1])
    with pytest.raises(TypeError, match="shape"):
        fluid.data("z", 3)


def test_create_lod_tensor_from_sequences_arrays_and_tensors():
    place = fluid.CPUPlace()
    t = fluid.create_lod_tensor([[1, 2], [3, 4, 5]], [[2, 3]], place)
    assert t.recursive_sequence_lengths() == [[2, 3]]
    assert t.lod() == [[0, 2, 5]]
    np.testing.assert_array_equal(np.array(t), np.array([[1], [2], [3], [4], [5]], "int64"))
    again = fluid.create_lod_tensor(t, [[1, 4]], place)
    assert again.lod() == [[0, 1, 5]]
    two = fluid.create_lod_tensor(np.zeros((6, 2), "float32"), [[2, 1], [1, 2, 3]], place)
    assert two.has_valid_recursive_sequence_lengths()
    r = fluid.create_random_int_lodtensor([[2, 3]], [4], place, low=0, high=9)
    assert np.array(r).shape == (5, 4) and 0 <= np.array(r).min() and np.array(r).max() <= 9
    with pytest.raises(ValueError, match="does not fit data of 4 rows"):
        fluid.create_lod_tensor(np.ones((4, 1)), [[2, 3]], place)
    with pytest.raises(ValueError, match="lengths"):
        fluid.create_lod_tensor([[1, 2], [3]], [[2, 2]], place)
    with pytest.raises(ValueError, match="does not fit"):  # level 0 ends at 3, level 1 has 2 sequences
        fluid.create_lod_tensor(np.ones((3, 1)), [[1, 2], [1, 2]], place)


def test_calc_gradient_of_one_target_and_of_weighted_targets(exe):
    x = fluid.data("x", [2, 3])
    w = fluid.data("w", [2, 3])
    y = layers.scale(x, 3.0)
    z = layers.elementwise_mul(y, y)  # 9 x^2
    g = fluid.backward.calc_gradient(z, x)
    a = np.arange(6, dtype="float32").reshape(2, 3)
    out, = exe.run(feed={"x": a}, fetch_list=[g])
    np.testing.assert_allclose(out, 18 * a)
    main = fluid.Program()
    with fluid.program_guard(main):
        x = fluid.data("x", [2, 3])
        w = fluid.data("w", [2, 3])
        unused = fluid.data("unused", [2, 3])
        y = layers.scale(x, 3.0)
        z = layers.elementwise_mul(y, y)
        g, none = fluid.gradients([y, z], [x, unused], target_gradients=[w, w])
    assert none is None
    out, = exe.run(main, feed={"x": a, "w": np.full((2, 3), 2, "float32")}, fetch_list=[g])
    np.testing.assert_allclose(out, 2 * (3 + 18 * a))


def test_attributes_given_as_variables(exe):
    x = fluid.data("x", [3, 4], "float64")
    two = layers.fill_constant([1], "int32", 2)
    minus_one = layers.fill_constant([1], "int64", -1)
    shape = fluid.data("shape", [2], "int32")
    filled = layers.fill_constant([two, 3], "float32", 1.5)
    filled_by = layers.fill_constant(shape, "float32", layers.fill_constant([1], "float64", 2.5))
    sliced = layers.slice(x, axes=[0, 1], starts=[0, 1], ends=[two, minus_one])
    expanded = layers.expand(x, expand_times=[two, 1])
    joined = layers.concat([x, x], axis=layers.fill_constant([1], "int32", 1))
    a = np.arange(12, dtype="float64").reshape(3, 4)
    outs = exe.run(feed={"x": a, "shape": np.array([1, 2], "int32")},
                   fetch_list=[filled, filled_by, sliced, expanded, joined])
    np.testing.assert_array_equal(outs[0], np.full((2, 3), 1.5, "float32"))
    np.testing.assert_array_equal(outs[1], np.full((1, 2), 2.5, "float32"))
    np.testing.assert_array_equal(outs[2], a[0:2, 1:-1])
    np.testing.assert_array_equal(outs[3], np.tile(a, (2, 1)))
    np.testing.assert_array_equal(outs[4], np.concatenate([a, a], axis=1))
    assert filled.shape == (-1, 3)


def test_fill_constant_checks_its_arguments_as_fluid_does():
    x1 = layers.data(name="x1", shape=[1], dtype="int16")
    x2 = layers.data(name="x2", shape=[1], dtype="int32")
    for kwargs in ({"dtype": "uint4"}, {"dtype": "int16", "out": x1}, {"shape": [1.1]},
                   {"dtype": "float64", "out": x2}, {"out": np.zeros(1, "float32")}, {"shape": 1},
                   {"shape": fluid.data("s", [2], "float32")}, {"shape": [fluid.data("b", [1], "bool"), 2]}):
        args = dict({"shape": [1], "dtype": "float32", "value": 5}, **kwargs)
        with pytest.raises(TypeError, match="fill_constant"):
            layers.fill_constant(**args)
    with pytest.raises(AssertionError):
        layers.fill_constant([], "float32", 1)


def test_layers_refuse_what_fluid_refuses():
    with pytest.raises(TypeError, match="transpose"):
        layers.transpose(layers.data("b", [2, 3], dtype="bool"), perm=[1, 0, 2])
    with pytest.raises(TypeError, match="flatten"):
        layers.flatten(layers.data("h", [2, 3], dtype="float16"))
    ids = layers.data("ids", [1], dtype="int32")
    with pytest.raises(TypeError, match="one_hot"):
        layers.one_hot(layers.data("f", [1], dtype="float32"), 4)
    with pytest.raises(TypeError, match="depth"):
        layers.one_hot(ids, 4.1)
    with pytest.raises(TypeError, match="factor"):
        layers.pow(layers.data("p", [3]), factor=layers.fill_constant([1], "float64", 3.0))


def test_matmul_infers_fluids_shapes():
    def shape(xs, ys, tx=False, ty=False):
        with fluid.program_guard(fluid.Program()):
            return layers.matmul(fluid.data("x", xs), fluid.data("y", ys), tx, ty).shape
    assert shape([5], [5]) == (1,)
    assert shape([5], [5, 4]) == (4,)
    assert shape([3, 5], [5]) == (3,)
    assert shape([2, 3, 5], [5]) == (2, 3)
    assert shape([3, 5], [2, 5, 4]) == (2, 3, 4)
    assert shape([5, 3], [4, 5], True, True) == (3, 4)
    assert shape([-1, 5], [5, 4]) == (-1, 4)


def test_activation_layers_take_their_attributes_positionally(exe):
    x = fluid.data("x", [4], "float64")
    st = layers.stanh(x, 0.5, 2.0)
    shrink = layers.softshrink(x, 0.5)
    factor = layers.pow(x, factor=layers.fill_constant([1], "float32", 3.0))
    a = np.array([-2.0, -0.25, 0.25, 2.0])
    outs = exe.run(feed={"x": a}, fetch_list=[st, shrink, factor])
    np.testing.assert_allclose(outs[0], 2.0 * np.tanh(0.5 * a))
    np.testing.assert_allclose(outs[1], np.where(np.abs(a) > 0.5, a - 0.5 * np.sign(a), 0))
    np.testing.assert_allclose(outs[2], a ** 3)


def test_conv2d_transpose_layer_shapes_match_what_runs(exe):
    x = fluid.data("x", [2, 3, 5, 5])
    outs = [layers.conv2d_transpose(x, num_filters=6, filter_size=3),
            layers.conv2d_transpose(x, num_filters=6, filter_size=3, stride=2, padding=1),
            layers.conv2d_transpose(x, num_filters=6, groups=3, filter_size=3, padding="SAME"),
            layers.conv2d_transpose(x, num_filters=4, output_size=[9, 9], stride=2)]
    exe.run(fluid.default_startup_program())
    results = exe.run(feed={"x": np.random.rand(2, 3, 5, 5).astype("float32")}, fetch_list=outs)
    for out, result in zip(outs, results):
        assert out.shape == result.shape
    assert [r.shape[2] for r in results] == [7, 9, 5, 9]
    with pytest.raises(ValueError, match="data_format"):
        layers.conv2d_transpose(x, num_filters=6, filter_size=3, data_format="NCDHW")
    with pytest.raises(ValueError, match="batch or channel"):
        layers.conv2d_transpose(x, num_filters=6, filter_size=3, padding=[[1, 1], [1, 1], [0, 0], [0, 0]])


def test_detection_layers_build_a_detector_end(exe):
    feature = fluid.data("feature", [1, 8, 2, 2])
    image = fluid.data("image", [1, 3, 16, 16])
    boxes, variances = layers.prior_box(feature, image, min_sizes=[4.0], aspect_ratios=[1.0, 2.0], flip=True,
                                        clip=True)
    target = fluid.data("target", [3, 4])
    priors = fluid.data("priors", [3, 4])
    encoded = layers.box_coder(priors, [0.1, 0.1, 0.2, 0.2], target, code_type="encode_center_size")
    iou = layers.iou_similarity(target, priors)
    bboxes = fluid.data("bboxes", [1, 3, 4])
    scores = fluid.data("scores", [1, 2, 3])
    kept = layers.multiclass_nms(bboxes, scores, score_threshold=0.1, nms_top_k=10, keep_top_k=10,
                                 nms_threshold=0.5, background_label=-1)
    matrix, index = layers.matrix_nms(bboxes, scores, score_threshold=0.1, post_threshold=0.0, nms_top_k=10,
                                      keep_top_k=10, background_label=-1, return_index=True)
    box = np.array([[0.1, 0.1, 0.4, 0.4], [0.12, 0.1, 0.42, 0.4], [0.6, 0.6, 0.9, 0.9]], "float32")
    score = np.array([[[0.9, 0.8, 0.7], [0.05, 0.05, 0.05]]], "float32")
    outs = exe.run(feed={"feature": np.zeros((1, 8, 2, 2), "float32"), "image": np.zeros((1, 3, 16, 16), "float32"),
                         "target": box, "priors": box, "bboxes": box[None], "scores": score},
                   fetch_list=[boxes, variances, encoded, iou, kept, matrix, index], return_numpy=False)
    assert np.array(outs[0]).shape == (2, 2, 3, 4)  # aspect ratios 1, 2, 1/2
    np.testing.assert_allclose(np.array(outs[1])[0, 0, 0], [0.1, 0.1, 0.2, 0.2])
    enc = np.array(outs[2])  # [targets, priors, 4]
    assert enc.shape == (3, 3, 4)
    np.testing.assert_allclose(enc[np.arange(3), np.arange(3)], 0, atol=1e-5)  # each box against itself
    np.testing.assert_allclose(np.diag(np.array(outs[3])), 1, rtol=1e-6)
    detections = np.array(outs[4])
    # Class 0 keeps boxes 0 and 2 (box 1 overlaps box 0 by IoU 0.88); class 1 scores below 0.1.
    np.testing.assert_allclose(detections[:, 1], [0.9, 0.7])
    np.testing.assert_allclose(detections[:, 2:], box[[0, 2]])
    assert outs[4].lod() == [[0, 2]]
    rows, at = np.array(outs[5]), np.array(outs[6]).ravel()
    np.testing.assert_allclose(rows[:, 2:], box[at % 3])
    with pytest.raises(TypeError, match="BBoxes"):
        layers.multiclass_nms(box, scores, 0.1, 10, 10)


def test_indexing_a_variable_slices_it(exe):
    x = fluid.data("x", [3, 4, 5], "float64")
    minus_one = layers.fill_constant([1], "int32", -1)
    two = layers.fill_constant([1], "int64", 2)
    rows = layers.assign(np.array([2, 0], "int64"))
    views = [x[1], x[-1, 1:3], x[:, :, 2:-1], x[..., 0], x[minus_one, :two], x[two:, 1:minus_one], x[rows],
             x[[0, 2]], x[::2, 1, ::-2], x[-1, 3:0:-1, 1::two], x[::-1]]
    a = np.arange(60, dtype="float64").reshape(3, 4, 5)
    outs = exe.run(feed={"x": a}, fetch_list=views)
    for out, want in zip(outs, [a[1], a[-1, 1:3], a[:, :, 2:-1], a[..., 0], a[-1, :2], a[2:, 1:-1], a[[2, 0]],
                                a[[0, 2]], a[::2, 1, ::-2], a[-1, 3:0:-1, 1::2], a[::-1]]):
        np.testing.assert_array_equal(out, want)
    with pytest.raises(IndexError, match="out of range"):
        x[3]
    with pytest.raises(IndexError, match="nonzero int"):
        x[::0]
    with pytest.raises(TypeError, match="not iterable"):
        list(x)


def test_lars_momentum_follows_the_lars_rule(exe):
    rng = np.random.RandomState(3)
    p, g, v = rng.rand(4, 5), rng.rand(4, 5), rng.rand(4, 5)
    lr, mu, coeff, decay, eps = 0.1, 0.9, 0.01, 0.005, 1e-6
    block = fluid.default_main_program().global_block()
    names = {}
    for name, value in (("p", p), ("g", g), ("v", v), ("lr", np.array([lr]))):
        names[name] = fluid.data(name, list(value.shape), "float64")
    block.append_op(type="lars_momentum",
                    inputs={"Param": names["p"], "Grad": names["g"], "Velocity": names["v"],
                            "LearningRate": names["lr"]},
                    outputs={"ParamOut": names["p"], "VelocityOut": names["v"]},
                    attrs={"mu": mu, "lars_coeff": coeff, "lars_weight_decay": decay, "epsilon": eps})
    new_p, new_v = exe.run(feed={"p": p, "g": g, "v": v, "lr": np.array([lr])}, fetch_list=["p", "v"])
    mu, coeff, decay, eps = (float(np.float32(a)) for a in (mu, coeff, decay, eps))  # FLOAT attributes
    p_norm, g_norm = np.linalg.norm(p), np.linalg.norm(g)
    local = lr * coeff * p_norm / (g_norm + decay * p_norm + eps)
    want_v = mu * v + local * (g + decay * p)
    np.testing.assert_allclose(new_v, want_v, rtol=1e-12)
    np.testing.assert_allclose(new_p, p - want_v, rtol=1e-12)


def test_random_batch_size_like_takes_the_batch_from_its_input(exe):
    x = fluid.data("x", [-1, 3])
    u = layers.uniform_random_batch_size_like(x, shape=[-1, 7], min=2.0, max=3.0, seed=5)
    n = layers.gaussian_random_batch_size_like(x, shape=[2, -1], input_dim_idx=0, output_dim_idx=1, seed=5)
    outs = exe.run(feed={"x": np.zeros((6, 3), "float32")}, fetch_list=[u, n])
    assert outs[0].shape == (6, 7) and 2 <= outs[0].min() and outs[0].max() < 3
    assert outs[1].shape == (2, 6)
    with pytest.raises(TypeError, match="dtype"):
        layers.uniform_random_batch_size_like(x, [-1, 7], dtype="int32")


def test_tensor_arrays_fill_in_a_loop_and_join(exe):
    x = fluid.data("x", [2, 3])
    array = layers.create_array("float32")
    i = layers.fill_constant([1], "int64", 0)
    limit = layers.fill_constant([1], "int64", 3)
    cond = layers.less_than(i, limit)
    loop = layers.While(cond)
    with loop.block():
        step = layers.cast(i, "float32")
        layers.array_write(layers.elementwise_mul(x, step, axis=0), i, array)
        layers.increment(i, in_place=True)
        layers.less_than(i, limit, cond=cond)
    length = layers.array_length(array)
    last = layers.array_read(array, layers.fill_constant([1], "int64", 2))
    stacked = layers.stack(array, axis=1)
    joined = layers.concat(array, axis=0)
    copied = layers.array_read(layers.assign(array), layers.fill_constant([1], "int64", 1))
    a = np.arange(6, dtype="float32").reshape(2, 3)
    outs = exe.run(feed={"x": a}, fetch_list=[length, last, stacked, joined, copied])
    assert outs[0].tolist() == [3]
    np.testing.assert_array_equal(outs[1], 2 * a)
    np.testing.assert_array_equal(outs[2], np.stack([0 * a, a, 2 * a], axis=1))
    np.testing.assert_array_equal(outs[3], np.concatenate([0 * a, a, 2 * a], axis=0))
    np.testing.assert_array_equal(outs[4], a)
    assert stacked.shape == (2, -1, 3)


def test_tensor_array_gradients_and_errors(exe):
    x = fluid.data("x", [2, 3])
    x.stop_gradient = False
    zero = layers.fill_constant([1], "int64", 0)
    one = layers.fill_constant([1], "int64", 1)
    array = layers.array_write(layers.scale(x, 3.0), zero)
    layers.array_write(layers.scale(x, 5.0), one, array)
    loss = layers.mean(layers.concat(array, axis=1))  # [2, 6]: d/dx = (3 + 5) / 12
    fluid.backward.append_backward(loss)
    a = np.ones((2, 3), "float32")
    grad, = exe.run(feed={"x": a}, fetch_list=[x.grad_name])
    np.testing.assert_allclose(grad, np.full((2, 3), 8 / 12.0), rtol=1e-6)
    main = fluid.Program()
    with fluid.program_guard(main):
        y = fluid.data("y", [2])
        arr = layers.array_write(y, layers.fill_constant([1], "int64", 0))
        past = layers.array_read(arr, layers.fill_constant([1], "int64", 4))
    with pytest.raises(Exception, match="I is 4, but X .* holds 1 entries"):
        exe.run(main, feed={"y": np.ones(2, "float32")}, fetch_list=[past])
    with pytest.raises(TypeError, match="not a tensor array"):
        layers.array_read(y, layers.fill_constant([1], "int64", 0))
    whole = fluid.Program()
    with fluid.program_guard(whole):
        arr = layers.array_write(fluid.data("y", [2]), layers.fill_constant([1], "int64", 0))
    with pytest.raises(Exception, match="holds a tensor array of 1 entries"):
        exe.run(whole, feed={"y": np.ones(2, "float32")}, fetch_list=[arr])


def test_a_range_of_a_tensor_array_and_its_gradient(exe):
    xs = [fluid.data("x%d" % k, [2, 3]) for k in range(3)]
    array = layers.create_array("float32")
    for x in xs:
        x.stop_gradient = False
        layers.array_write(x, layers.array_length(array), array)
    first_two = array[0:layers.array_length(array) - 1]
    out, index = layers.tensor_array_to_tensor(first_two, axis=1, use_stack=True)
    fluid.backward.append_backward(layers.reduce_sum(out))
    a = np.arange(6, dtype="float32").reshape(2, 3)
    feed = {"x0": a, "x1": 2 * a, "x2": 3 * a}
    got, idx, g0, g1, g2 = exe.run(feed=feed, fetch_list=[out, index] + [x.grad_name for x in xs])
    np.testing.assert_array_equal(got, np.stack([a, 2 * a], axis=1))
    assert idx.tolist() == [1, 1]
    np.testing.assert_array_equal(g0, np.ones_like(a))
    np.testing.assert_array_equal(g1, np.ones_like(a))
    np.testing.assert_array_equal(g2, np.zeros_like(a))  # past the range: no gradient
    assert array[1].shape == (2, 3)


def test_array_gradients_follow_an_index_incremented_in_place(exe):
    x0, x1 = fluid.data("x0", [2, 2]), fluid.data("x1", [2, 2])
    x0.stop_gradient = x1.stop_gradient = False
    i = layers.zeros([1], "int64")
    array = layers.array_write(x0, i)
    layers.increment(i)  # in place: the reads and writes before keep the index they had
    layers.array_write(x1, i, array)
    j = layers.zeros([1], "int64")
    first = layers.array_read(array, j)
    layers.increment(j)
    second = layers.array_read(array, j)
    # Two reads of one array: their array gradients are summed entry by entry.
    loss = layers.sums([layers.reduce_sum(first), layers.scale(layers.reduce_sum(second), 2.0)])
    fluid.backward.append_backward(loss)
    ones = np.ones((2, 2), "float32")
    g0, g1 = exe.run(feed={"x0": ones, "x1": ones}, fetch_list=[x0.grad_name, x1.grad_name])
    np.testing.assert_array_equal(g0, ones)
    np.testing.assert_array_equal(g1, 2 * ones)


def test_fluid_embedding_and_one_hot_keep_every_dim_of_the_ids(exe):
    ids = fluid.data("ids", [2, 3], "int64")
    table = np.arange(20, dtype="float32").reshape(5, 4)
    emb = fluid.embedding(ids, size=[5, 4], param_attr=fluid.ParamAttr(
        name="table", initializer=fluid.initializer.NumpyArrayInitializer(table)))
    hot = fluid.one_hot(ids, depth=5)
    assert emb.shape == (2, 3, 4) and hot.shape == (2, 3, 5)
    exe.run(fluid.default_startup_program())
    a = np.array([[0, 4, 1], [2, 2, 3]], "int64")
    got_emb, got_hot = exe.run(feed={"ids": a}, fetch_list=[emb, hot])
    np.testing.assert_array_equal(got_emb, table[a])
    np.testing.assert_array_equal(got_hot, np.eye(5, dtype="float32")[a])
    with pytest.raises(TypeError, match="fluid.embedding"):
        fluid.embedding(fluid.data("f", [2], "float32"), size=[5, 4])


def _fibonacci_loop():
    """while_loop computing the tenth Fibonacci number and writing each into an array."""
    i = layers.fill_constant([1], "int64", 0)
    ten = layers.fill_constant([1], "int64", 10)
    a = layers.fill_constant([1], "float32", 0.0)
    b = layers.fill_constant([1], "float32", 1.0)
    array = layers.create_array("float32")

    def body(i, a, b, array):
        layers.array_write(a, i, array)
        return i + 1, b, a + b, array
    return layers.while_loop(lambda i, a, b, array: layers.less_than(i, ten), body, [i, a, b, array])


def test_while_loop_in_both_modes(exe):
    i, a, _, array = _fibonacci_loop()
    got_i, got_a, last = exe.run(fetch_list=[i, a, layers.array_read(array, layers.fill_constant([1], "int64", 9))])
    assert got_i[0] == 10 and got_a[0] == 55 and last[0] == 34
    assert [op.type for op in fluid.default_main_program().global_block().ops].count("while") == 1
    with fluid.dygraph.guard():
        i, a, _, array = _fibonacci_loop()
        assert i.numpy()[0] == 10 and a.numpy()[0] == 55
        assert layers.array_read(array, layers.fill_constant([1], "int64", 9)).numpy()[0] == 34
    j = layers.fill_constant([1], "int64", 0)
    with pytest.raises(ValueError, match="body returned 1 values for 2 loop_vars"):
        layers.while_loop(lambda x, y: layers.less_than(x, y), lambda x, y: x, [j, j])
    with pytest.raises(TypeError, match="bool Variable"):
        layers.while_loop(lambda x: x, lambda x: x, [layers.fill_constant([1], "int64", 0)])
