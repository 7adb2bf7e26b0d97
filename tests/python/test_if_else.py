"""fluid.layers.IfElse: each row (or sequence) goes through the branch its condition picks,
forward and backward, against the same computation written row by row in PyTorch; the
split and merge ops keep sequences whole; misuse refused."""
import numpy as np
import pytest
import torch

import rill.fluid as fluid


def test_if_else_routes_each_row_through_its_branch_forward_and_backward():
    rng = np.random.RandomState(3)
    xs = rng.uniform(-1, 1, (6, 4))
    labels = np.array([[0], [3], [1], [4], [5], [2]], "int64")
    gs = rng.uniform(-1, 1, (6, 2))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[4], dtype="float64")
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        g = fluid.layers.data(name="g", shape=[2], dtype="float64")
        x.stop_gradient = False
        limit = fluid.layers.fill_constant_batch_size_like(input=label, dtype="int64", shape=[-1, 1], value=3)
        cond = fluid.layers.less_than(x=label, y=limit)
        ie = fluid.layers.IfElse(cond)
        with ie.true_block():
            ie.output(fluid.layers.fc(input=ie.input(x), size=2, act="tanh", param_attr=fluid.ParamAttr(name="wt"),
                                      bias_attr=False))
        with ie.false_block():
            ie.output(fluid.layers.fc(input=ie.input(x), size=2, act="sigmoid",
                                      param_attr=fluid.ParamAttr(name="wf"), bias_attr=False))
        out = ie()[0]
        fluid.backward.append_backward(fluid.layers.reduce_sum(fluid.layers.elementwise_mul(out, g)))
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        wt, wf = (np.array(scope.find_var(n).get_tensor()) for n in ("wt", "wf"))
        got, got_x, got_wt, got_wf = exe.run(main, feed={"x": xs, "label": labels, "g": gs},
                                             fetch_list=[out, "x@GRAD", "wt@GRAD", "wf@GRAD"])
    tx, twt, twf = (torch.tensor(v, requires_grad=True) for v in (xs, wt, wf))
    rows = [torch.tanh(tx[i] @ twt) if labels[i, 0] < 3 else torch.sigmoid(tx[i] @ twf) for i in range(6)]
    expected = torch.stack(rows)
    (expected * torch.from_numpy(gs)).sum().backward()
    np.testing.assert_allclose(got, expected.detach().numpy(), rtol=1e-12)
    for name, value, tensor in [("x", got_x, tx), ("wt", got_wt, twt), ("wf", got_wf, twf)]:
        np.testing.assert_allclose(value, tensor.grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)


def test_split_and_merge_keep_sequences_whole():
    xs = np.arange(14, dtype="float32").reshape(7, 2)
    lengths = [2, 0, 3, 1, 1]
    mask = np.array([[True], [False], [False], [True], [False]])
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[2], dtype="float32", lod_level=1)
        m = fluid.layers.data(name="m", shape=[1], dtype="bool")
        helper = fluid.layer_helper.LayerHelper("split")
        yes, no, back = (helper.create_tmp_variable("float32") for _ in range(3))
        helper.append_op(type="split_lod_tensor", inputs={"X": [x], "Mask": [m]},
                         outputs={"OutTrue": [yes], "OutFalse": [no]}, attrs={"level": 0})
        helper.append_op(type="merge_lod_tensor", inputs={"X": [x], "Mask": [m], "InTrue": [yes], "InFalse": [no]},
                         outputs={"Out": [back]}, attrs={"level": 0})
    exe = fluid.Executor(fluid.CPUPlace())
    got_yes, got_no, got_back = exe.run(
        main, feed={"x": fluid.create_lod_tensor(xs, [lengths], fluid.CPUPlace()), "m": mask},
        fetch_list=[yes, no, back], return_numpy=False)
    offsets = np.cumsum([0] + lengths)
    seqs = [xs[offsets[i]:offsets[i + 1]] for i in range(5)]
    np.testing.assert_array_equal(np.array(got_yes), np.concatenate([seqs[0], seqs[3]]))
    assert got_yes.recursive_sequence_lengths() == [[2, 1]]
    np.testing.assert_array_equal(np.array(got_no), np.concatenate([seqs[1], seqs[2], seqs[4]]))
    assert got_no.recursive_sequence_lengths() == [[0, 3, 1]]
    np.testing.assert_array_equal(np.array(got_back), xs)
    assert got_back.recursive_sequence_lengths() == [lengths]


def test_if_else_misuse_is_refused():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.layers.data(name="x", shape=[4], dtype="float32")
        cond = fluid.layers.data(name="c", shape=[1], dtype="bool")
        ie = fluid.layers.IfElse(cond)
        with pytest.raises(ValueError, match="inside true_block"):
            ie.input(x)
        with pytest.raises(ValueError, match="must give its outputs"):
            with ie.true_block():
                ie.input(x)
        with pytest.raises(ValueError, match="before calling it"):
            fluid.layers.IfElse(cond)()
