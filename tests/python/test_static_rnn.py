"""fluid.layers.StaticRNN over inputs [T, batch, ...], built as Fluid builds it (a `recurrent`
op): a recurrence's outputs and every gradient (parameters, the step input, the initial
memory) against the same recurrence in PyTorch, forward and reversed; a memory started from a
batch reference's size; the saved inference model serving the same outputs; misuse refused
by name, at build time and at run time."""
import os

import numpy as np
import pytest
import torch

import rill.fluid as fluid

T, B, E, H = 4, 3, 5, 6


def build_rnn(reverse=False):
    """The tanh recurrence h_t = tanh(x_t wx + h_{t-1} wh + b) over x [T, B, E] from boot,
    its outputs weighted by g into the loss; `reverse` steps from the last entry to the first
    (recurrent's attribute, which Fluid's StaticRNN does not set)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[T, B, E], dtype="float64", append_batch_size=False)
        boot = fluid.layers.data(name="boot", shape=[B, H], dtype="float64", append_batch_size=False)
        g = fluid.layers.data(name="g", shape=[T, B, H], dtype="float64", append_batch_size=False)
        x.stop_gradient = boot.stop_gradient = False
        rnn = fluid.layers.StaticRNN()
        with rnn.step():
            prev = rnn.memory(init=boot)
            word = rnn.step_input(x)
            hidden = fluid.layers.fc(input=[word, prev], size=H, act="tanh",
                                     param_attr=[fluid.ParamAttr(name="wx"), fluid.ParamAttr(name="wh")],
                                     bias_attr=fluid.ParamAttr(name="b"))
            rnn.update_memory(prev, hidden)
            rnn.step_output(hidden)
        out = rnn()
        recurrent = [op for op in main.global_block().ops if op.type == "recurrent"]
        assert len(recurrent) == 1
        recurrent[0]._set_attr("reverse", reverse)
        loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(out, g))
        fluid.backward.append_backward(loss)
    return main, startup, out


@pytest.mark.parametrize("reverse", [False, True])
def test_static_rnn_matches_the_recurrence_in_pytorch_forward_and_every_gradient(reverse):
    rng = np.random.RandomState(2)
    xs = rng.uniform(-1, 1, (T, B, E))
    h0 = rng.uniform(-1, 1, (B, H))
    gs = rng.uniform(-1, 1, (T, B, H))
    main, startup, out = build_rnn(reverse)
    assert [op.type for op in main.global_block().ops].count("recurrent_grad") == 1
    scope = fluid.Scope()
    names = ["wx@GRAD", "wh@GRAD", "b@GRAD", "x@GRAD", "boot@GRAD"]
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        params = {p: np.array(scope.find_var(p).get_tensor()) for p in ["wx", "wh", "b"]}
        fetched = exe.run(main, feed={"x": xs, "boot": h0, "g": gs}, fetch_list=[out] + names)
    got, grads = fetched[0], dict(zip(names, fetched[1:]))

    t = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    tx, th0 = torch.tensor(xs, requires_grad=True), torch.tensor(h0, requires_grad=True)
    h, outs = th0, [None] * T
    for step in (reversed(range(T)) if reverse else range(T)):
        h = torch.tanh(tx[step] @ t["wx"] + h @ t["wh"] + t["b"])
        outs[step] = h
    expected = torch.stack(outs)
    (expected * torch.from_numpy(gs)).sum().backward()
    assert got.shape == (T, B, H)
    np.testing.assert_allclose(got, expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    for name, tensor in [("wx", t["wx"]), ("wh", t["wh"]), ("b", t["b"]), ("x", tx), ("boot", th0)]:
        np.testing.assert_allclose(grads[name + "@GRAD"].reshape(tensor.shape), tensor.grad.numpy(), rtol=1e-10,
                                   atol=1e-12, err_msg=name)


def test_the_saved_inference_model_serves_what_the_program_computes(tmp_path):
    rng = np.random.RandomState(3)
    xs, h0 = rng.uniform(-1, 1, (T, B, E)), rng.uniform(-1, 1, (B, H))
    main, startup, out = build_rnn()
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        test_program = main.clone(for_test=True)
        expected, = exe.run(test_program, feed={"x": xs, "boot": h0, "g": np.zeros((T, B, H))}, fetch_list=[out])
        fluid.io.save_inference_model(str(tmp_path), ["x", "boot"], [out], exe, main_program=test_program)
    assert os.path.exists(tmp_path / "__model__")
    with fluid.scope_guard(fluid.Scope()):
        exe = fluid.Executor(fluid.CPUPlace())
        program, feeds, fetches = fluid.io.load_inference_model(str(tmp_path), exe)
        assert "recurrent" in [op.type for op in program.global_block().ops]
        got, = exe.run(program, feed={"x": xs, "boot": h0}, fetch_list=fetches)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_inputs_of_different_lengths_are_refused_when_run():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[-1, B, 2], dtype="float32", append_batch_size=False)
        y = fluid.layers.data(name="y", shape=[-1, B, 2], dtype="float32", append_batch_size=False)
        rnn = fluid.layers.StaticRNN()
        with rnn.step():
            rnn.output(fluid.layers.elementwise_add(rnn.step_input(x), rnn.step_input(y)))
        out = rnn()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    got, = exe.run(main, feed={"x": np.ones((3, B, 2), "float32"), "y": np.ones((3, B, 2), "float32")},
                   fetch_list=[out])
    np.testing.assert_allclose(got, np.full((3, B, 2), 2.0))
    with pytest.raises(Exception, match="input 'y' has 5 steps, input 'x' 3"):
        exe.run(main, feed={"x": np.ones((3, B, 2), "float32"), "y": np.ones((5, B, 2), "float32")},
                fetch_list=[out])


def test_a_memory_from_shape_and_batch_ref_starts_at_its_value_with_the_batch_size():
    xs = np.arange(T * B * 2, dtype="float32").reshape(T, B, 2)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[T, B, 2], dtype="float32", append_batch_size=False)
        rnn = fluid.layers.StaticRNN()
        with rnn.step():
            word = rnn.step_input(x)
            total = rnn.memory(shape=[-1, 2], batch_ref=word, init_value=1.0)
            new_total = fluid.layers.elementwise_add(total, word)
            rnn.update_memory(total, new_total)
            rnn.output(new_total, total)
        running, before = rnn()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    got_running, got_before = exe.run(main, feed={"x": xs}, fetch_list=[running, before])
    np.testing.assert_allclose(got_running, 1.0 + np.cumsum(xs, axis=0))
    np.testing.assert_allclose(got_before, got_running - xs)


def test_misuse_is_refused_by_name():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.layers.data(name="x", shape=[T, B, 2], dtype="float32", append_batch_size=False)
        y = fluid.layers.data(name="y", shape=[T + 1, B, 2], dtype="float32", append_batch_size=False)
        rnn = fluid.layers.StaticRNN()
        with pytest.raises(ValueError, match="inside its block"):
            rnn.step_input(x)
        with pytest.raises(ValueError, match="y has 5 steps, an earlier input 4"):
            with rnn.step():
                rnn.step_input(x)
                rnn.step_input(y)
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.layers.data(name="x", shape=[T, B, 2], dtype="float32", append_batch_size=False)
        rnn = fluid.layers.StaticRNN()
        with pytest.raises(ValueError, match="never given its next value"):
            with rnn.step():
                word = rnn.step_input(x)
                rnn.memory(shape=[-1, 2], batch_ref=word)
                rnn.output(word)
