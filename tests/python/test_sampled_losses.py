"""fluid.layers.nce and hsigmoid, the large-vocabulary losses. nce: the cost against its
formula written in numpy (fixed noise classes, uniform and log-uniform noise), its gradients
against finite differences in float64, the samplers' draws against their distributions, a
word classifier over 10,000 classes learning through it, bad input refused by name.
hsigmoid: the loss and its gradients against the complete binary tree written in PyTorch,
a class outside the tree refused."""
import numpy as np
import pytest
import torch

import rill
import rill.fluid as fluid

N, D, C = 6, 5, 40


def build(sampler="uniform", custom_neg=None, num_neg=4, dtype="float64", seed=1, custom_dist=None):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[D], dtype=dtype)
        label = fluid.layers.data(name="label", shape=[2], dtype="int64")
        x.stop_gradient = False
        cost = fluid.layers.nce(x, label, C, num_neg_samples=num_neg, sampler=sampler, seed=seed,
                                param_attr=fluid.ParamAttr(name="w"), bias_attr=fluid.ParamAttr(name="b"),
                                custom_dist=custom_dist)
        if custom_neg is not None:
            main.global_block().ops[-2]._set_attr("custom_neg_classes", custom_neg)
        loss = fluid.layers.reduce_sum(cost)
        fluid.backward.append_backward(loss)
    return main, startup, loss


def noise_probability(sampler, c):
    return 1.0 / C if sampler == "uniform" else np.log((c + 2.0) / (c + 1.0)) / np.log(C)


@pytest.mark.parametrize("sampler", ["uniform", "log_uniform"])
def test_cost_and_gradients_match_the_formula_and_finite_differences(sampler):
    rng = np.random.RandomState(0)
    xs = rng.uniform(-1, 1, (N, D))
    labels = rng.randint(0, C, (N, 2)).astype("int64")
    negatives = [3, 17, 29, 8]
    main, startup, loss = build(sampler, custom_neg=negatives)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        w = rng.uniform(-0.5, 0.5, (C, D))
        b = rng.uniform(-0.5, 0.5, (C, 1))
        scope.find_var("w").get_tensor().set(w, fluid.CPUPlace())
        scope.find_var("b").get_tensor().set(b, fluid.CPUPlace())

        def run(x, w_value):
            scope.find_var("w").get_tensor().set(w_value, fluid.CPUPlace())
            return exe.run(main, feed={"x": x, "label": labels}, fetch_list=[loss, "x@GRAD", "w@GRAD"])

        got_loss, got_dx, got_dw = run(xs, w)
        expected = 0.0
        for i in range(N):
            for j, c in enumerate(list(labels[i]) + negatives):
                o = 1 / (1 + np.exp(-(xs[i] @ w[c] + b[c, 0])))
                q = noise_probability(sampler, c) * len(negatives)
                expected += -np.log(o / (o + q)) if j < 2 else -np.log(q / (o + q))
        # rtol: the layer's division by k + 1 is a scale op, whose factor is a float attribute.
        np.testing.assert_allclose(got_loss[0], expected / (len(negatives) + 1), rtol=1e-7)
        eps = 1e-6
        for (i, d) in [(0, 0), (2, 3), (5, 4)]:
            up, down = xs.copy(), xs.copy()
            up[i, d] += eps
            down[i, d] -= eps
            numeric = (run(up, w)[0][0] - run(down, w)[0][0]) / (2 * eps)
            np.testing.assert_allclose(got_dx[i, d], numeric, rtol=1e-6, atol=1e-9)
        for (c, d) in [(labels[0, 0], 1), (17, 2), (11, 0)]:  # a true class, a noise class, neither
            up, down = w.copy(), w.copy()
            up[c, d] += eps
            down[c, d] -= eps
            numeric = (run(xs, up)[0][0] - run(xs, down)[0][0]) / (2 * eps)
            np.testing.assert_allclose(got_dw[c, d], numeric, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("sampler", ["uniform", "log_uniform", "custom_dist"])
def test_the_noise_classes_follow_the_sampler(sampler):
    dist = list(np.random.RandomState(3).dirichlet(np.ones(C))) if sampler == "custom_dist" else None
    num_neg = 500
    main, startup, loss = build(sampler, num_neg=num_neg, custom_dist=dist, seed=5)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    samples = [op for op in main.global_block().ops if op.type == "nce"][0].output("SampleLabels")[0]
    feed = {"x": np.zeros((N, D)), "label": np.zeros((N, 2), "int64")}
    drawn = exe.run(main, feed=feed, fetch_list=[samples])[0][:, 2:].ravel()
    counts = np.bincount(drawn, minlength=C) / drawn.size
    expected = np.array(dist) if dist else np.array([noise_probability(sampler, c) for c in range(C)])
    if sampler == "log_uniform":
        expected[-1] = 0  # the log-uniform draws stop short of the last class, as Paddle's do
        expected /= expected.sum()
    assert np.abs(counts - expected).max() < 0.02, (counts, expected)
    again = exe.run(main, feed=feed, fetch_list=[samples])[0][:, 2:].ravel()
    np.testing.assert_array_equal(drawn, again)  # a nonzero seed draws the same classes each run


def test_a_classifier_over_ten_thousand_classes_learns_through_nce():
    classes, rng = 10000, np.random.RandomState(2)
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup):
        word = fluid.layers.data(name="word", shape=[1], dtype="int64")
        target = fluid.layers.data(name="target", shape=[1], dtype="int64")
        emb = fluid.layers.embedding(word, size=[classes, 16])
        cost = fluid.layers.mean(fluid.layers.nce(emb, target, classes, num_neg_samples=8, sampler="log_uniform",
                                                  seed=9))
        fluid.optimizer.Adam(learning_rate=0.05).minimize(cost)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    losses = []
    for _ in range(150):
        words = rng.randint(0, 200, (64, 1)).astype("int64")
        losses.append(float(exe.run(main, feed={"word": words, "target": (words * 7 + 1) % 200},
                                    fetch_list=[cost])[0][0]))
    assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:10]), (losses[:10], losses[-10:])


def test_cost_of_many_rows_split_across_threads_matches_the_formula():
    """Enough rows for the cost to be worked out in chunks on the intra-op threads: each row's
    cost is still the formula's for the classes it drew."""
    rows, dim, classes, num_neg = 1500, 32, 1000, 10
    rng = np.random.RandomState(5)
    xs, labels = rng.uniform(-1, 1, (rows, dim)), rng.randint(0, classes, (rows, 1)).astype("int64")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[dim], dtype="float64")
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        cost = fluid.layers.nce(x, label, classes, num_neg_samples=num_neg, seed=3,
                                param_attr=fluid.ParamAttr(name="w"), bias_attr=fluid.ParamAttr(name="b"))
    samples = next(op for op in main.global_block().ops if op.type == "nce").output("SampleLabels")[0]
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        w, b = rng.uniform(-0.5, 0.5, (classes, dim)), rng.uniform(-0.5, 0.5, (classes, 1))
        scope.find_var("w").get_tensor().set(w, fluid.CPUPlace())
        scope.find_var("b").get_tensor().set(b, fluid.CPUPlace())
        got, drawn = exe.run(main, feed={"x": xs, "label": labels}, fetch_list=[cost, samples])
    assert (drawn[:, 0] == labels[:, 0]).all() and ((drawn >= 0) & (drawn < classes)).all()
    o = 1 / (1 + np.exp(-(np.einsum("nd,nkd->nk", xs, w[drawn]) + b[drawn, 0])))
    noise = num_neg / classes
    expected = -np.log(o[:, 0] / (o[:, 0] + noise)) - np.log(noise / (o[:, 1:] + noise)).sum(axis=1)
    # The layer divides by num_neg + 1 with a float32 scale: within its rounding.
    np.testing.assert_allclose(got[:, 0], expected / (num_neg + 1), rtol=1e-7)


def test_bad_input_is_refused_by_name():
    main, startup, loss = build()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    with pytest.raises(rill.Error, match="sampled class 40 of row 0 is outside"):
        exe.run(main, feed={"x": np.zeros((N, D)), "label": np.full((N, 2), C, "int64")}, fetch_list=[loss])
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.layers.data(name="x", shape=[D], dtype="float32")
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        with pytest.raises(ValueError, match="sampler must be one of"):
            fluid.layers.nce(x, label, C, sampler="zipf")
        with pytest.raises(ValueError, match="num_total_classes"):
            fluid.layers.nce(x, label, C, sampler="custom_dist", custom_dist=[0.5, 0.5])


def hsigmoid_reference(x, w, b, labels, num_classes):
    """The loss over the complete binary tree written in PyTorch, from the tree's definition:
    class c's code is c + num_classes; at level j the node is (code >> (j + 1)) - 1 and the
    branch bit j, for the bits below the highest; columns past a path add log 2."""
    width = int(num_classes - 1).bit_length()
    rows = []
    for i, c in enumerate(labels):
        code = int(c) + num_classes
        terms = []
        for j in range(code.bit_length() - 1):
            node = (code >> (j + 1)) - 1
            z = torch.clamp(x[i] @ w[node] + b[node, 0], -40, 40)
            terms.append(torch.nn.functional.softplus(z) - ((code >> j) & 1) * z)
        rows.append(sum(terms) + (width - len(terms)) * np.log(2.0))
    return torch.stack(rows)


@pytest.mark.parametrize("num_classes,n,d", [(11, 7, 5), (1000, 600, 32)])
def test_hsigmoid_matches_the_tree_written_in_pytorch_forward_and_gradients(num_classes, n, d):
    """A small tree, and one with enough rows for the loss to be worked out in chunks on the
    intra-op threads."""
    rng = np.random.RandomState(4)
    xs = rng.uniform(-1, 1, (n, d))
    labels = np.array([0, 10, 3, 7, 5, 1, 9], "int64") if n == 7 else rng.randint(0, num_classes, n).astype("int64")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[d], dtype="float64")
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        x.stop_gradient = False
        out = fluid.layers.hsigmoid(x, label, num_classes, param_attr=fluid.ParamAttr(name="hw"),
                                    bias_attr=fluid.ParamAttr(name="hb"))
        fluid.backward.append_backward(fluid.layers.reduce_sum(out))
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        w = rng.uniform(-1, 1, (num_classes - 1, d))
        b = rng.uniform(-1, 1, (num_classes - 1, 1))
        scope.find_var("hw").get_tensor().set(w, fluid.CPUPlace())
        scope.find_var("hb").get_tensor().set(b, fluid.CPUPlace())
        got, dx, dw, db = exe.run(main, feed={"x": xs, "label": labels.reshape(-1, 1)},
                                  fetch_list=[out, "x@GRAD", "hw@GRAD", "hb@GRAD"])
    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (xs, w, b))
    expected = hsigmoid_reference(tx, tw, tb, labels, num_classes)
    expected.sum().backward()
    np.testing.assert_allclose(got.ravel(), expected.detach().numpy(), rtol=1e-12)
    for name, value, tensor in [("x", dx, tx), ("w", dw, tw), ("b", db, tb)]:
        np.testing.assert_allclose(value, tensor.grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)


def test_hsigmoid_refuses_a_class_outside_the_tree():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        out = fluid.layers.hsigmoid(x, label, 4)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    with pytest.raises(rill.Error, match=r"Label\[1\] = 4 is not a class in \[0, 4\)"):
        exe.run(main, feed={"x": np.zeros((2, 3), "float32"), "label": np.array([[1], [4]], "int64")},
                fetch_list=[out])


@pytest.mark.parametrize("layer", ["nce", "hsigmoid"])
def test_a_sparse_table_gradient_holds_the_rows_used_and_trains_as_the_dense_one(layer):
    """is_sparse: the weight's gradient is SelectedRows of the rows the batch used (nce's
    sampled classes, hsigmoid's path nodes), each once, ascending, and SGD on it takes the
    same steps as on the dense gradient."""
    rng = np.random.RandomState(4)
    xs = rng.uniform(-1, 1, (N, D)).astype("float32")
    labels = rng.randint(0, C, (N, 1)).astype("int64")

    def train(is_sparse):
        main, startup = fluid.Program(), fluid.Program()
        main.random_seed = startup.random_seed = 5
        with fluid.program_guard(main, startup):
            x = fluid.layers.data(name="x", shape=[D], dtype="float32")
            label = fluid.layers.data(name="label", shape=[1], dtype="int64")
            attr = fluid.ParamAttr(name="w")
            if layer == "nce":
                cost = fluid.layers.nce(x, label, C, num_neg_samples=3, seed=7, param_attr=attr, is_sparse=is_sparse)
            else:
                cost = fluid.layers.hsigmoid(x, label, C, param_attr=attr, is_sparse=is_sparse)
            loss = fluid.layers.mean(cost)
            fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)
        main.global_block().var("w@GRAD").persistable = True  # kept in the scope, to read
        scope = fluid.Scope()
        with fluid.scope_guard(scope):
            exe = fluid.Executor(fluid.CPUPlace())
            exe.run(startup)
            losses = [float(exe.run(main, feed={"x": xs, "label": labels}, fetch_list=[loss])[0][0])
                      for _ in range(5)]
            grad = scope.find_var("w@GRAD")
            rows = grad.get_selected_rows().rows() if is_sparse else None
            return losses, np.array(scope.find_var("w").get_tensor()), rows

    dense_losses, dense_w, _ = train(False)
    sparse_losses, sparse_w, rows = train(True)
    assert list(rows) == sorted(set(rows)) and 0 < len(rows) < C - 1, rows
    np.testing.assert_allclose(sparse_losses, dense_losses, rtol=1e-6)
    np.testing.assert_allclose(sparse_w, dense_w, rtol=1e-5, atol=1e-7)
    assert dense_losses[-1] < dense_losses[0]
