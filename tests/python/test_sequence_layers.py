"""fluid.layers' sequence layers on LoD tensors fed through rill.fluid: each sequence of a
fed batch (lengths 2, 0 and 3) reversed, softmaxed, pooled and expanded as numpy computes
it, and two small text classifiers train: embedding, sequence_conv and max pooling
(nets.sequence_conv_pool), and a stacked LSTM and reversed GRU (dynamic_lstm, dynamic_gru)."""
import numpy as np

import rill.fluid as fluid


def softmax(v):
    e = np.exp(v - v.max())
    return e / e.sum()


def test_sequence_layers_compute_per_sequence_of_a_fed_lod_tensor():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[1], dtype="float32", lod_level=1)
        reversed_ = fluid.layers.sequence_reverse(x)
        normalized = fluid.layers.sequence_softmax(x)
        last = fluid.layers.sequence_last_step(x)
        first = fluid.layers.sequence_first_step(x)
        spread = fluid.layers.sequence_expand_as(last, x)
        repeated = fluid.layers.sequence_expand(first, x)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    values = np.array([[1], [2], [3], [4], [5]], "float32")
    fed = fluid.create_lod_tensor(values, [[2, 0, 3]], fluid.CPUPlace())
    r, n, l, f, s, p = exe.run(main, feed={"x": fed}, fetch_list=[reversed_, normalized, last, first, spread,
                                                                   repeated])
    np.testing.assert_array_equal(r.ravel(), [2, 1, 5, 4, 3])
    np.testing.assert_allclose(n.ravel(), np.concatenate([softmax(np.array([1.0, 2])), softmax(np.array([3.0, 4, 5]))]),
                               rtol=1e-6)
    np.testing.assert_array_equal(l.ravel(), [2, 0, 5])  # an empty sequence pools to 0
    np.testing.assert_array_equal(f.ravel(), [1, 0, 3])
    np.testing.assert_array_equal(s.ravel(), [2, 2, 5, 5, 5])
    np.testing.assert_array_equal(p.ravel(), [1, 1, 3, 3, 3])


def train_text_classifier(features, label_of):
    """Trains features(embedded words) -> a pooled row per sequence, then an fc softmax, with
    Adam on 32 sequences of 1 to 11 word ids, each labelled label_of(its ids); returns the
    loss of each of 60 steps."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        words = fluid.layers.data(name="words", shape=[1], dtype="int64", lod_level=1)
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        pooled = features(fluid.layers.embedding(words, size=[50, 16]))
        prediction = fluid.layers.fc(pooled, 2, act="softmax")
        loss = fluid.layers.mean(fluid.layers.cross_entropy(prediction, label))
        fluid.optimizer.Adam(learning_rate=0.01).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    rng = np.random.RandomState(0)
    lengths = [int(n) for n in rng.randint(1, 12, size=32)]
    ids = rng.randint(0, 50, size=(sum(lengths), 1)).astype("int64")
    offsets = np.cumsum([0] + lengths)
    labels = np.array([[label_of(list(ids[offsets[i]:offsets[i + 1], 0]))] for i in range(32)], "int64")
    feed = {"words": fluid.create_lod_tensor(ids, [lengths], fluid.CPUPlace()), "label": labels}
    return [float(exe.run(main, feed=feed, fetch_list=[loss])[0]) for _ in range(60)]


def test_a_text_classifier_of_sequence_layers_trains():
    # The label: whether a sequence holds word 7, which the pooled convolution can see.
    losses = train_text_classifier(
        lambda emb: fluid.nets.sequence_conv_pool(emb, num_filters=16, filter_size=3, act="tanh"),
        lambda seq: int(7 in seq))
    assert losses[-1] < 0.5 * losses[0], losses


def test_a_stacked_recurrent_text_classifier_trains():
    def features(emb):
        lstm, _ = fluid.layers.dynamic_lstm(fluid.layers.fc(emb, 4 * 16), 4 * 16)
        gru = fluid.layers.dynamic_gru(fluid.layers.fc(lstm, 3 * 16), 16, is_reverse=True)
        return fluid.layers.sequence_pool(gru, "max")

    # The label: whether word 7 comes before any word 9 in a sequence: order matters.
    losses = train_text_classifier(
        features, lambda seq: int(7 in seq and (9 not in seq or seq.index(7) < seq.index(9))))
    assert losses[-1] < 0.5 * losses[0], losses


def test_sequence_pad_unpad_and_mask_layers():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[2], dtype="float32", lod_level=1)
        pad = fluid.layers.fill_constant(shape=[1], dtype="float32", value=-1.0)
        padded, length = fluid.layers.sequence_pad(x, pad)
        packed = fluid.layers.sequence_unpad(padded, length)
        mask = fluid.layers.sequence_mask(length, dtype="float32")
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    values = np.arange(10, dtype="float32").reshape(5, 2)
    p, n, u, m = exe.run(main, feed={"x": fluid.create_lod_tensor(values, [[3, 0, 2]], fluid.CPUPlace())},
                         fetch_list=[padded, length, packed, mask])
    assert p.shape == (3, 3, 2)
    np.testing.assert_array_equal(p[0], values[:3])
    np.testing.assert_array_equal(p[1], -np.ones((3, 2)))
    np.testing.assert_array_equal(p[2], np.concatenate([values[3:], -np.ones((1, 2))]))
    np.testing.assert_array_equal(n, [3, 0, 2])
    np.testing.assert_array_equal(u, values)
    np.testing.assert_array_equal(m, [[1, 1, 1], [0, 0, 0], [1, 1, 0]])


def test_sequence_concat_reshape_slice_and_enumerate_layers():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        a = fluid.layers.data(name="a", shape=[2], dtype="float32", lod_level=1)
        b = fluid.layers.data(name="b", shape=[2], dtype="float32", lod_level=1)
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
        joined = fluid.layers.sequence_concat([a, b])
        recut = fluid.layers.sequence_reshape(joined, new_dim=1)
        offset = fluid.layers.assign(np.array([[1], [2]], "int64"))
        length = fluid.layers.assign(np.array([[2], [3]], "int64"))
        cut = fluid.layers.sequence_slice(recut, offset, length)
        windows = fluid.layers.sequence_enumerate(ids, win_size=2)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    place = fluid.CPUPlace()
    feed = {"a": fluid.create_lod_tensor(np.arange(1, 7, dtype="float32").reshape(3, 2), [[1, 2]], place),
            "b": fluid.create_lod_tensor(np.arange(7, 11, dtype="float32").reshape(2, 2), [[1, 1]], place),
            "ids": fluid.create_lod_tensor(np.array([[5], [6], [7], [8]], "int64"), [[3, 1]], place)}
    j, c, w = exe.run(main, feed=feed, fetch_list=[joined, cut, windows])
    np.testing.assert_array_equal(j.ravel(), [1, 2, 7, 8, 3, 4, 5, 6, 9, 10])
    np.testing.assert_array_equal(c.ravel(), [2, 7, 5, 6, 9])
    np.testing.assert_array_equal(w, [[5, 6], [6, 7], [7, 0], [8, 0]])


def test_lod_reset_lod_append_and_sequence_scatter_layers():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[1], dtype="float32", lod_level=1)
        recut = fluid.layers.lod_reset(x, target_lod=[0, 1, 5])
        pair = fluid.layers.data(name="pair", shape=[1], dtype="float32")
        # One sequence of two, then a level below it: each of the two its own sequence of one row.
        nested = fluid.layers.lod_append(fluid.layers.lod_reset(pair, target_lod=[0, 2]), [0, 1, 2])
        base = fluid.layers.data(name="base", shape=[3], dtype="float32")
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
        updates = fluid.layers.data(name="updates", shape=[1], dtype="float32", lod_level=1)
        scattered = fluid.layers.sequence_scatter(base, ids, updates)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    place = fluid.CPUPlace()
    values = np.arange(5, dtype="float32").reshape(5, 1)
    feed = {"x": fluid.create_lod_tensor(values, [[2, 3]], place), "pair": np.ones((2, 1), "float32"),
            "base": np.zeros((2, 3), "float32"),
            "ids": fluid.create_lod_tensor(np.array([[0], [2], [1]], "int64"), [[2, 1]], place),
            "updates": fluid.create_lod_tensor(np.array([[1], [2], [3]], "float32"), [[2, 1]], place)}
    r, n, s = exe.run(main, feed=feed, fetch_list=[recut, nested, scattered], return_numpy=False)
    assert r.recursive_sequence_lengths() == [[1, 4]]
    np.testing.assert_array_equal(np.array(r), values)
    assert n.recursive_sequence_lengths() == [[2], [1, 1]]
    np.testing.assert_array_equal(np.array(s), [[1, 0, 2], [0, 3, 0]])


def test_row_conv_and_im2sequence_layers():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[2], dtype="float32", lod_level=1)
        ahead = fluid.layers.row_conv(x, future_context_size=1,
                                      param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(1.0)))
        image = fluid.layers.data(name="image", shape=[1, 3, 3], dtype="float32")
        windows = fluid.layers.im2sequence(image, filter_size=2, stride=1)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    place = fluid.CPUPlace()
    values = np.arange(10, dtype="float32").reshape(5, 2)
    pixels = np.arange(9, dtype="float32").reshape(1, 1, 3, 3)
    a, w = exe.run(main, feed={"x": fluid.create_lod_tensor(values, [[3, 2]], place), "image": pixels},
                   fetch_list=[ahead, windows], return_numpy=False)
    # With a filter of ones each row adds the next row of its own sequence, if there is one.
    np.testing.assert_array_equal(np.array(a), [[2, 4], [6, 8], [4, 5], [14, 16], [8, 9]])
    assert w.recursive_sequence_lengths() == [[4]]
    np.testing.assert_array_equal(np.array(w), [[0, 1, 3, 4], [1, 2, 4, 5], [3, 4, 6, 7], [4, 5, 7, 8]])
