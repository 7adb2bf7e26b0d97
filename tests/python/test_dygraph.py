"""fluid.dygraph: ops that run as they are appended, values read at once, gradients by
backward(); the static programs around the mode are left as they were."""
import numpy as np
import pytest

import rill.fluid as fluid
import rill.paddle as paddle
from rill.fluid import layers

RNG = np.random.RandomState(0)


def test_layers_run_as_they_are_appended():
    main = fluid.default_main_program()
    xs = RNG.randn(2, 3).astype("float32")
    with fluid.dygraph.guard():
        x = fluid.dygraph.to_variable(xs)
        y = layers.relu(x * 2.0 + 1.0)
        np.testing.assert_allclose(y.numpy(), np.maximum(2 * xs + 1, 0), rtol=1e-6)
        assert y.shape == [2, 3] and x.stop_gradient
        z = layers.concat([y, y], axis=0)
        assert z.shape == [4, 3]  # the next layer sees the shape the op gave
        w = layers.fc(z, 5, bias_attr=False)
        weight = [p for p in fluid.default_main_program().global_block().all_parameters()][0]
        # The weights are drawn afresh each run: an entry of w near 0 has no relative bound.
        np.testing.assert_allclose(w.numpy(), z.numpy() @ weight.numpy(), rtol=1e-5, atol=1e-6)
    assert fluid.default_main_program() is main and not fluid.dygraph.enabled()
    assert len(main.global_block().ops) == 0


def test_backward_gives_the_gradients_of_what_ran():
    xs = RNG.randn(3, 4).astype("float32")
    with fluid.dygraph.guard():
        x = fluid.dygraph.to_variable(xs)
        x.stop_gradient = False
        y = fluid.dygraph.to_variable(np.full((3, 4), 2.0, "float32"))
        loss = layers.reduce_sum(layers.elementwise_mul(x, x) * y)
        loss.backward()
        np.testing.assert_allclose(x.gradient(), 4 * xs, rtol=1e-6)
        assert y.gradient() is None  # y stops gradients
        np.testing.assert_allclose(x.grad.numpy(), 4 * xs, rtol=1e-6)
        layers.reduce_sum(layers.scale(x, 3.0)).backward()  # adds to what the first left
        np.testing.assert_allclose(x.gradient(), 4 * xs + 3, rtol=1e-6)
        x.clear_gradient()
        np.testing.assert_array_equal(x.gradient(), np.zeros_like(xs))


def test_an_optimizer_steps_with_the_gradients_backward_left():
    with fluid.dygraph.guard():
        linear = paddle.nn.Linear(3, 1, bias_attr=False)
        sgd = fluid.optimizer.SGD(learning_rate=0.1, parameter_list=linear.parameters())
        x = fluid.dygraph.to_variable(np.ones([2, 3], "float32"))
        for _ in range(2):
            before = linear.weight.numpy()
            loss = paddle.mean(linear(x))
            loss.backward()
            sgd.minimize(loss)
            np.testing.assert_allclose(linear.weight.numpy(), before - 0.1 * np.ones([3, 1]), rtol=1e-6)
            linear.clear_gradients()


def _sparse_embedding_training(sparse, weight_decay):
    """Three Adam steps of a sparse or dense Embedding(10, 4); its final table."""
    paddle.seed(3)
    with fluid.dygraph.guard():
        emb = paddle.nn.Embedding(10, 4, sparse=sparse)
        adam = paddle.optimizer.Adam(0.01, parameters=emb.parameters(), weight_decay=weight_decay)
        for _ in range(3):
            out = emb(paddle.to_tensor(np.array([[1], [3], [3]], np.int64)))
            paddle.mean(out * out).backward()
            adam.step()
            adam.clear_grad()
        return emb.weight.numpy()


def test_a_sparse_gradient_accumulates_clears_and_trains_as_a_dense_one():
    with fluid.dygraph.guard():
        emb = paddle.nn.Embedding(10, 2, sparse=True)
        table = emb.weight.numpy()
        for ids in ([[4], [1]], [[1], [7]]):
            paddle.sum(emb(paddle.to_tensor(np.array(ids, np.int64))) * 3.0).backward()
        values, rows = emb.weight.gradient()  # Paddle's form of a sparse gradient
        assert rows.tolist() == [1, 4, 7]  # each row once, ascending, the two backward()s added
        np.testing.assert_allclose(values, [[6, 6], [3, 3], [3, 3]])
        emb.weight.clear_gradient()
        values, rows = emb.weight.gradient()
        assert rows.size == 0 and values.shape == (0, 2)
        np.testing.assert_array_equal(emb.weight.numpy(), table)
    # A weight decay on a sparse gradient makes it dense (Paddle's static sum does; its dygraph refuses)
    for decay in (None, 0.1):
        np.testing.assert_allclose(_sparse_embedding_training(True, decay), _sparse_embedding_training(False, decay),
                                   rtol=1e-6)


def test_no_grad_outputs_stop_gradients():
    with fluid.dygraph.guard():
        x = fluid.dygraph.to_variable(np.ones([2], "float32"))
        x.stop_gradient = False
        with fluid.dygraph.no_grad():
            y = layers.scale(x, 3.0)
        assert y.stop_gradient and not layers.scale(x, 3.0).stop_gradient


def test_paddle_switches_modes_and_makes_tensors():
    paddle.disable_static()
    try:
        assert paddle.in_dynamic_mode()
        a = paddle.to_tensor([[1.5, -2.0]])
        b = paddle.to_tensor(np.array([[3, 4]], "int64"))
        assert a.numpy().dtype == np.float32 and b.numpy().dtype == np.int64
        np.testing.assert_allclose(paddle.nn.functional.relu(a).numpy(), [[1.5, 0.0]])
        np.testing.assert_array_equal(paddle.less_than(b, paddle.full([1], 4, "int64")).numpy(), [[True, False]])
        linear = paddle.nn.Linear(2, 3)
        out = linear(a)
        np.testing.assert_allclose(out.numpy(), a.numpy() @ linear.weight.numpy() + linear.bias.numpy(), rtol=1e-6,
                                   atol=1e-6)
        paddle.mean(out).backward()
        np.testing.assert_allclose(linear.bias.gradient(), np.full(3, 1 / 3.0), rtol=1e-6)
        linear.clear_gradients()
        np.testing.assert_array_equal(linear.bias.gradient(), np.zeros(3))
    finally:
        paddle.enable_static()
    assert not paddle.in_dynamic_mode()
    constant = paddle.to_tensor([1.0, 2.0])  # static mode: a constant of the program
    assert constant.dtype == fluid.core.VarDesc.VarType.FP32 and constant.shape == (2,)


def test_a_static_variable_has_no_value_to_read():
    x = layers.fill_constant([2], "float32", 1.0)
    with pytest.raises(RuntimeError, match="only in dygraph mode"):
        x.numpy()
    with pytest.raises(RuntimeError, match="dygraph mode only"):
        fluid.dygraph.to_variable(np.ones(2))


def test_dygraph_layers():
    xs = RNG.randn(4, 3, 5, 5).astype("float32")
    with fluid.dygraph.guard():
        x = fluid.dygraph.to_variable(xs)
        training = fluid.dygraph.BatchNorm(3)(x).numpy()
        mean, var = xs.mean(axis=(0, 2, 3), keepdims=True), xs.var(axis=(0, 2, 3), keepdims=True)
        np.testing.assert_allclose(training, (xs - mean) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-5)
        # trainable statistics: is_test normalizes by the batch as training does (Paddle's contract)
        np.testing.assert_allclose(fluid.dygraph.BatchNorm(3, is_test=True, trainable_statistics=True)(x).numpy(),
                                   training, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(fluid.dygraph.BatchNorm(3, is_test=True)(x).numpy(), xs / np.sqrt(1 + 1e-5),
                                   rtol=1e-5)
        inst = fluid.dygraph.InstanceNorm(3, param_attr=False, bias_attr=False)(x).numpy()
        m, v = xs.mean(axis=(2, 3), keepdims=True), xs.var(axis=(2, 3), keepdims=True)
        np.testing.assert_allclose(inst, (xs - m) / np.sqrt(v + 1e-5), rtol=1e-4, atol=1e-5)
        ln = fluid.LayerNorm([5, 5])(x).numpy()
        m, v = xs.mean(axis=(2, 3), keepdims=True), xs.var(axis=(2, 3), keepdims=True)
        np.testing.assert_allclose(ln, (xs - m) / np.sqrt(v + 1e-5), rtol=1e-4, atol=1e-5)
        pooled = fluid.dygraph.Pool2D(2, "MAX", 2, data_format="nchw")(x).numpy()
        np.testing.assert_array_equal(pooled, xs[:, :, :4, :4].reshape(4, 3, 2, 2, 2, 2).max(axis=(3, 5)))
        dropout = fluid.dygraph.Dropout(p=0.25)
        dropout.eval()
        np.testing.assert_allclose(dropout(x).numpy(), 0.75 * xs, rtol=1e-6)
        ids = fluid.dygraph.to_variable(np.array([[0, 2], [1, 0]], "int64"))
        embedding = fluid.dygraph.Embedding([3, 4], padding_idx=0)
        rows = embedding(ids).numpy()
        np.testing.assert_array_equal(rows[0, 0], np.zeros(4))
        np.testing.assert_array_equal(rows[0, 1], embedding.weight.numpy()[2])
        linear = fluid.Linear(5, 2, act="relu")
        out = linear(x).numpy()
        np.testing.assert_allclose(out, np.maximum(xs @ linear.weight.numpy() + linear.bias.numpy(), 0), rtol=1e-5,
                                   atol=1e-6)
    with pytest.raises(ValueError, match="data_format"):
        fluid.dygraph.Pool2D(2, data_format="NWHC")
