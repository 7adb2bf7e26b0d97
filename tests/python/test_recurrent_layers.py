"""fluid.layers.dynamic_lstm, dynamic_lstmp and dynamic_gru on LoD tensors (sequences of lengths 3, 1, 0, 5
and 2) against PyTorch, forward and the parameters' gradients: the LSTM against nn.LSTM on
packed sequences (Fluid's gate order candidate, input, forget, output mapped onto PyTorch's
input, forget, cell, output), the GRU against its formula written in PyTorch (nn.GRU resets
after its hidden product, Fluid's before it, so they are different functions);
dynamic_lstmp against nn.LSTM with proj_size. lstm_unit against nn.LSTMCell, gru_unit
against one step of the same GRU. Misshaped input is refused by name.
(test_sequence_layers.py trains a stacked recurrent text classifier.)"""
import numpy as np
import pytest
import torch

import rill
import rill.fluid as fluid

E, D = 5, 4
LENGTHS = [3, 1, 0, 5, 2]
# PyTorch's gate blocks (i, f, g, o) are Fluid's blocks 1, 2, 0, 3.
TORCH_FROM_FLUID = [1, 2, 0, 3]


def lod_tensor(values):
    return fluid.create_lod_tensor(values, [LENGTHS], fluid.CPUPlace())


def sequences(rows):
    offsets = np.cumsum([0] + LENGTHS)
    return [rows[offsets[i]:offsets[i + 1]] for i in range(len(LENGTHS))]


def run_with_gradients(build, feed, params, width=D):
    """Builds `build(x)` -> hidden ([T, width]) under fresh programs, takes the loss
    sum(hidden * g) and returns hidden, each parameter's value and each one's gradient."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[E], dtype="float64", lod_level=1)
        g = fluid.layers.data(name="g", shape=[width], dtype="float64", lod_level=1)
        hidden = build(x)
        loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(hidden, g))
        fluid.backward.append_backward(loss)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        values = {p: np.array(scope.find_var(p).get_tensor()) for p in params}
        fetched = exe.run(main, feed=feed, fetch_list=[hidden] + [p + "@GRAD" for p in params])
    return fetched[0], values, dict(zip(params, fetched[1:]))


def to_torch_lstm_rows(m):
    """[4D, n] in Fluid's block order -> PyTorch's."""
    return np.concatenate([m[k * D:(k + 1) * D] for k in TORCH_FROM_FLUID])


def from_torch_lstm_rows(m):
    out = np.empty_like(m)
    for j, k in enumerate(TORCH_FROM_FLUID):
        out[k * D:(k + 1) * D] = m[j * D:(j + 1) * D]
    return out


def torch_lstm_on_packed_sequences(lstm, xs, gs, is_reverse):
    """nn.LSTM `lstm` over the non-empty sequences of xs ([T, E], LENGTHS), packed, each run
    from its last row with is_reverse; returns its outputs in xs's row order, with the
    gradient of sum(outputs * gs) taken into lstm's parameters."""
    present = [i for i, n in enumerate(LENGTHS) if n > 0]
    flip = (lambda t: torch.flip(t, [0])) if is_reverse else (lambda t: t)
    packed = torch.nn.utils.rnn.pack_sequence(
        [flip(torch.from_numpy(sequences(xs)[i])) for i in present], enforce_sorted=False)
    out, _ = lstm(packed)
    padded, _ = torch.nn.utils.rnn.pad_packed_sequence(out)
    expected = torch.cat([flip(padded[:LENGTHS[i], j]) for j, i in enumerate(present)])
    (expected * torch.from_numpy(gs)).sum().backward()
    return expected


@pytest.mark.parametrize("is_reverse", [False, True])
def test_dynamic_lstm_matches_pytorch_lstm_on_packed_sequences(is_reverse):
    rng = np.random.RandomState(1)
    xs = rng.uniform(-1, 1, (sum(LENGTHS), E))
    gs = rng.uniform(-1, 1, (sum(LENGTHS), D))

    def build(x):
        proj = fluid.layers.fc(x, 4 * D, bias_attr=False, param_attr=fluid.ParamAttr(name="proj_w"))
        hidden, _ = fluid.layers.dynamic_lstm(
            proj, 4 * D, use_peepholes=False, is_reverse=is_reverse, dtype="float64",
            param_attr=fluid.ParamAttr(name="lstm_w"),
            bias_attr=fluid.ParamAttr(name="lstm_b", initializer=fluid.initializer.Uniform(-0.5, 0.5)))
        return hidden

    hidden, p, grads = run_with_gradients(build, {"x": lod_tensor(xs), "g": lod_tensor(gs)},
                                          ["proj_w", "lstm_w", "lstm_b"])

    lstm = torch.nn.LSTM(E, D, dtype=torch.float64)
    with torch.no_grad():
        lstm.weight_ih_l0.copy_(torch.from_numpy(to_torch_lstm_rows(p["proj_w"].T)))
        lstm.weight_hh_l0.copy_(torch.from_numpy(to_torch_lstm_rows(p["lstm_w"].T)))
        lstm.bias_ih_l0.copy_(torch.from_numpy(to_torch_lstm_rows(p["lstm_b"][0])))
        lstm.bias_hh_l0.zero_()
    expected = torch_lstm_on_packed_sequences(lstm, xs, gs, is_reverse)

    np.testing.assert_allclose(hidden, expected.detach().numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(grads["proj_w"], from_torch_lstm_rows(lstm.weight_ih_l0.grad.numpy()).T, rtol=1e-8,
                               atol=1e-12)
    np.testing.assert_allclose(grads["lstm_w"], from_torch_lstm_rows(lstm.weight_hh_l0.grad.numpy()).T, rtol=1e-8,
                               atol=1e-12)
    np.testing.assert_allclose(grads["lstm_b"][0], from_torch_lstm_rows(lstm.bias_ih_l0.grad.numpy()), rtol=1e-8,
                               atol=1e-12)


@pytest.mark.parametrize("is_reverse", [False, True])
def test_dynamic_lstmp_matches_pytorch_lstm_with_a_projection(is_reverse):
    """nn.LSTM(proj_size=P) recurs W_hr h, unactivated: dynamic_lstmp with an identity
    projection and no peepholes."""
    P = 3
    rng = np.random.RandomState(7)
    xs = rng.uniform(-1, 1, (sum(LENGTHS), E))
    gs = rng.uniform(-1, 1, (sum(LENGTHS), P))

    def build(x):
        proj = fluid.layers.fc(x, 4 * D, bias_attr=False, param_attr=fluid.ParamAttr(name="proj_w"))
        projection, _ = fluid.layers.dynamic_lstmp(
            proj, 4 * D, P, use_peepholes=False, is_reverse=is_reverse, proj_activation="identity", dtype="float64",
            bias_attr=fluid.ParamAttr(name="lstmp_b", initializer=fluid.initializer.Uniform(-0.5, 0.5)))
        return projection

    main_params = ["proj_w", "lstmp_0.w_0", "lstmp_0.w_1", "lstmp_b"]
    with fluid.unique_name.guard():
        projection, p, grads = run_with_gradients(build, {"x": lod_tensor(xs), "g": lod_tensor(gs)}, main_params,
                                                  width=P)

    lstm = torch.nn.LSTM(E, D, proj_size=P, dtype=torch.float64)
    with torch.no_grad():
        lstm.weight_ih_l0.copy_(torch.from_numpy(to_torch_lstm_rows(p["proj_w"].T)))
        lstm.weight_hh_l0.copy_(torch.from_numpy(to_torch_lstm_rows(p["lstmp_0.w_0"].T)))
        lstm.weight_hr_l0.copy_(torch.from_numpy(p["lstmp_0.w_1"].T))
        lstm.bias_ih_l0.copy_(torch.from_numpy(to_torch_lstm_rows(p["lstmp_b"][0])))
        lstm.bias_hh_l0.zero_()
    expected = torch_lstm_on_packed_sequences(lstm, xs, gs, is_reverse)

    np.testing.assert_allclose(projection, expected.detach().numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(grads["proj_w"], from_torch_lstm_rows(lstm.weight_ih_l0.grad.numpy()).T, rtol=1e-8,
                               atol=1e-12)
    np.testing.assert_allclose(grads["lstmp_0.w_0"], from_torch_lstm_rows(lstm.weight_hh_l0.grad.numpy()).T,
                               rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(grads["lstmp_0.w_1"], lstm.weight_hr_l0.grad.numpy().T, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(grads["lstmp_b"][0], from_torch_lstm_rows(lstm.bias_ih_l0.grad.numpy()), rtol=1e-8,
                               atol=1e-12)


def torch_gru(x, w, b, h0, origin_mode):
    """Fluid's GRU over one sequence x [L, 3D]: u, r = sigmoid(x_ur + h W_ur + b_ur),
    c = tanh(x_c + (r h) W_c + b_c), h = u c + (1 - u) h (origin_mode: u h + (1 - u) c).
    W holds W_ur [D, 2D] then W_c [D, D] as one flat buffer."""
    w_ur, w_c = w.reshape(-1)[:2 * D * D].reshape(D, 2 * D), w.reshape(-1)[2 * D * D:].reshape(D, D)
    h, out = h0, []
    for t in range(x.shape[0]):
        ur = torch.sigmoid(x[t, :2 * D] + h @ w_ur + b[0, :2 * D])
        u, r = ur[:D], ur[D:]
        c = torch.tanh(x[t, 2 * D:] + (r * h) @ w_c + b[0, 2 * D:])
        h = u * h + (1 - u) * c if origin_mode else u * c + (1 - u) * h
        out.append(h)
    return out


@pytest.mark.parametrize("origin_mode,is_reverse", [(False, False), (True, True)])
def test_dynamic_gru_matches_its_formula_in_pytorch(origin_mode, is_reverse):
    rng = np.random.RandomState(2)
    xs = rng.uniform(-1, 1, (sum(LENGTHS), E))
    gs = rng.uniform(-1, 1, (sum(LENGTHS), D))
    h0 = rng.uniform(-1, 1, (len(LENGTHS), D))

    def build(x):
        start = fluid.layers.data(name="h0", shape=[len(LENGTHS), D], dtype="float64", append_batch_size=False)
        proj = fluid.layers.fc(x, 3 * D, bias_attr=False, param_attr=fluid.ParamAttr(name="proj_w"))
        return fluid.layers.dynamic_gru(
            proj, D, h_0=start, is_reverse=is_reverse, origin_mode=origin_mode,
            param_attr=fluid.ParamAttr(name="gru_w"),
            bias_attr=fluid.ParamAttr(name="gru_b", initializer=fluid.initializer.Uniform(-0.5, 0.5)))

    hidden, p, grads = run_with_gradients(build, {"x": lod_tensor(xs), "g": lod_tensor(gs), "h0": h0},
                                          ["proj_w", "gru_w", "gru_b"])

    t = {name: torch.tensor(v, requires_grad=True) for name, v in p.items()}
    rows = []
    for i, seq in enumerate(sequences(xs)):
        x = torch.from_numpy(seq) @ t["proj_w"]
        if is_reverse:
            x = torch.flip(x, [0])
        steps = torch_gru(x, t["gru_w"], t["gru_b"], torch.from_numpy(h0[i]), origin_mode)
        rows.extend(reversed(steps) if is_reverse else steps)
    expected = torch.stack(rows)
    (expected * torch.from_numpy(gs)).sum().backward()

    np.testing.assert_allclose(hidden, expected.detach().numpy(), rtol=1e-9, atol=1e-12)
    for name in p:
        np.testing.assert_allclose(grads[name], t[name].grad.numpy(), rtol=1e-8, atol=1e-12, err_msg=name)


def test_lstm_unit_matches_pytorch_lstm_cell():
    rng = np.random.RandomState(3)
    n = 3
    xs, h0, c0 = rng.uniform(-1, 1, (n, E)), rng.uniform(-1, 1, (n, D)), rng.uniform(-1, 1, (n, D))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[n, E], dtype="float64", append_batch_size=False)
        h_prev = fluid.layers.data(name="h_prev", shape=[n, D], dtype="float64", append_batch_size=False)
        c_prev = fluid.layers.data(name="c_prev", shape=[n, D], dtype="float64", append_batch_size=False)
        h, c = fluid.layers.lstm_unit(x, h_prev, c_prev, param_attr=fluid.ParamAttr(name="w"),
                                      bias_attr=fluid.ParamAttr(name="b",
                                                                initializer=fluid.initializer.Uniform(-0.5, 0.5)))
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        w, b = (np.array(scope.find_var(p).get_tensor()) for p in ("w", "b"))
        got_h, got_c = exe.run(main, feed={"x": xs, "h_prev": h0, "c_prev": c0}, fetch_list=[h, c])
    # lstm_unit's gate blocks are input, forget, output, candidate; PyTorch's input, forget, candidate, output.
    blocks = [0, 1, 3, 2]
    rows = lambda m: np.concatenate([m[k * D:(k + 1) * D] for k in blocks])  # noqa: E731
    cell = torch.nn.LSTMCell(E, D, dtype=torch.float64)
    with torch.no_grad():
        cell.weight_ih.copy_(torch.from_numpy(rows(w[:E].T)))
        cell.weight_hh.copy_(torch.from_numpy(rows(w[E:].T)))
        cell.bias_ih.copy_(torch.from_numpy(rows(b.reshape(-1))))
        cell.bias_hh.zero_()
        want_h, want_c = cell(torch.from_numpy(xs), (torch.from_numpy(h0), torch.from_numpy(c0)))
    np.testing.assert_allclose(got_c, want_c.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got_h, want_h.numpy(), rtol=1e-9, atol=1e-12)


def test_gru_unit_is_one_step_of_the_gru():
    rng = np.random.RandomState(4)
    n = 3
    xs, h0 = rng.uniform(-1, 1, (n, 3 * D)), rng.uniform(-1, 1, (n, D))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[n, 3 * D], dtype="float64", append_batch_size=False)
        h_prev = fluid.layers.data(name="h_prev", shape=[n, D], dtype="float64", append_batch_size=False)
        hidden, _, _ = fluid.layers.gru_unit(
            x, h_prev, 3 * D, origin_mode=True, param_attr=fluid.ParamAttr(name="w"),
            bias_attr=fluid.ParamAttr(name="b", initializer=fluid.initializer.Uniform(-0.5, 0.5)))
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        w, b = (torch.from_numpy(np.array(scope.find_var(p).get_tensor())) for p in ("w", "b"))
        got, = exe.run(main, feed={"x": xs, "h_prev": h0}, fetch_list=[hidden])
    want = [torch_gru(torch.from_numpy(xs[i:i + 1]), w, b, torch.from_numpy(h0[i]), True)[0] for i in range(n)]
    np.testing.assert_allclose(got, torch.stack(want).numpy(), rtol=1e-9, atol=1e-12)


def test_misshaped_recurrent_input_is_refused_by_name():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.layers.data(name="x", shape=[10], dtype="float32", lod_level=1)
        with pytest.raises(ValueError, match="size must be 4"):
            fluid.layers.dynamic_lstm(x, 10)
        with pytest.raises(ValueError, match="3 \\* size"):
            fluid.layers.dynamic_gru(x, 4)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[6], dtype="float32", lod_level=1)
        h0 = fluid.layers.data(name="h0", shape=[3, 2], dtype="float32", append_batch_size=False)
        hidden = fluid.layers.dynamic_gru(x, 2, h_0=h0)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    fed = fluid.create_lod_tensor(np.zeros((3, 6), "float32"), [[1, 2]], fluid.CPUPlace())
    with pytest.raises(rill.Error, match="H0"):
        exe.run(main, feed={"x": fed, "h0": np.zeros((3, 2), "float32")}, fetch_list=[hidden])
