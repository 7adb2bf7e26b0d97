"""fluid.layers.DynamicRNN and gradients through While, on sequences of lengths 3, 1, 0, 5
and 2: the RNN's outputs and every gradient (parameters, the sequence input, the initial
memory) against the same recurrence run sequence by sequence in PyTorch; the rank-table ops
against numpy; a While loop over tensor arrays against its analytic gradient; a loop that
overwrites a tensor on the gradient path refused by name; a DynamicRNN classifier that
learns."""
import numpy as np
import pytest
import torch

import rill.fluid as fluid

E, H = 5, 4
LENGTHS = [3, 1, 0, 5, 2]


def lod_tensor(values, lengths=LENGTHS):
    return fluid.create_lod_tensor(values, [lengths], fluid.CPUPlace())


def run(main, startup, feed, fetch_list, scope=None):
    scope = scope or fluid.Scope()
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        params = {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in main.global_block().all_parameters()}
        return params, exe.run(main, feed=feed, fetch_list=fetch_list, return_numpy=False)


def build_rnn(need_reorder=True):
    x = fluid.layers.data(name="x", shape=[E], dtype="float64", lod_level=1)
    boot = fluid.layers.data(name="boot", shape=[H], dtype="float64")
    g = fluid.layers.data(name="g", shape=[H], dtype="float64", lod_level=1)
    x.stop_gradient = boot.stop_gradient = False
    rnn = fluid.layers.DynamicRNN()
    with rnn.block():
        word = rnn.step_input(x)
        prev = rnn.memory(init=boot, need_reorder=need_reorder)
        hidden = fluid.layers.fc(input=[word, prev], size=H, act="tanh",
                                 param_attr=[fluid.ParamAttr(name="wx"), fluid.ParamAttr(name="wh")],
                                 bias_attr=fluid.ParamAttr(name="b"))
        rnn.update_memory(prev, hidden)
        rnn.output(hidden)
    out = rnn()
    loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(out, g))
    fluid.backward.append_backward(loss)
    return out


def test_dynamic_rnn_matches_the_recurrence_in_pytorch_forward_and_every_gradient():
    rng = np.random.RandomState(3)
    xs = rng.uniform(-1, 1, (sum(LENGTHS), E))
    boot = rng.uniform(-1, 1, (len(LENGTHS), H))
    gs = rng.uniform(-1, 1, (sum(LENGTHS), H))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        out = build_rnn()
    names = ["wx@GRAD", "wh@GRAD", "b@GRAD", "x@GRAD", "boot@GRAD"]
    params, fetched = run(main, startup, {"x": lod_tensor(xs), "boot": boot, "g": lod_tensor(gs)}, [out] + names)
    got, grads = fetched[0], dict(zip(names, (np.array(t) for t in fetched[1:])))
    assert got.recursive_sequence_lengths() == [LENGTHS]

    t = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    tx, tboot = torch.tensor(xs, requires_grad=True), torch.tensor(boot, requires_grad=True)
    offsets = np.cumsum([0] + LENGTHS)
    outs = []
    for i, n in enumerate(LENGTHS):
        h = tboot[i]
        for r in range(offsets[i], offsets[i] + n):
            h = torch.tanh(tx[r] @ t["wx"] + h @ t["wh"] + t["b"])
            outs.append(h)
    expected = torch.stack(outs)
    (expected * torch.from_numpy(gs)).sum().backward()
    np.testing.assert_allclose(np.array(got), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    for name, tensor in [("wx", t["wx"]), ("wh", t["wh"]), ("b", t["b"]), ("x", tx), ("boot", tboot)]:
        np.testing.assert_allclose(grads[name + "@GRAD"].reshape(tensor.shape), tensor.grad.numpy(), rtol=1e-10,
                                   atol=1e-12, err_msg=name)


def test_rank_table_ops_against_numpy():
    rng = np.random.RandomState(0)
    xs = rng.uniform(-1, 1, (sum(LENGTHS), 2)).astype("float32")
    rows = rng.uniform(-1, 1, (len(LENGTHS), 3)).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[2], dtype="float32", lod_level=1)
        r = fluid.layers.data(name="r", shape=[3], dtype="float32")
        table = fluid.layers.lod_rank_table(x)
        length = fluid.layers.max_sequence_len(table)
        array = fluid.layers.lod_tensor_to_array(x, table)
        steps, sizes = fluid.layers.tensor_array_to_tensor(array, axis=0)
        back = fluid.layers.array_to_lod_tensor(array, table)
        reordered = fluid.layers.reorder_lod_tensor_by_rank(r, table)
        step = fluid.layers.fill_constant(shape=[1], dtype="int64", value=2)
        shrunk = fluid.layers.shrink_memory(reordered, step, table)
    table.persistable = True  # kept in the scope, to read as Fluid's LoDRankTable
    scope = fluid.Scope()
    _, (got_table, got_len, got_steps, got_sizes, got_back, got_reordered, got_shrunk) = run(
        main, startup, {"x": lod_tensor(xs), "r": rows}, [table, length, steps, sizes, back, reordered, shrunk], scope)
    rank = sorted(range(len(LENGTHS)), key=lambda i: -LENGTHS[i])  # stable: ties keep their order
    assert rank == [3, 0, 4, 1, 2]
    items = [(i, LENGTHS[i]) for i in rank]
    assert scope.find_var(table.name).get_lod_rank_table().items() == items
    assert np.array(got_table).tolist() == [list(item) for item in items]  # int64 [n, 2], fetched as any tensor
    assert np.array(got_len).tolist() == [5]
    offsets = np.cumsum([0] + LENGTHS)
    expected_steps = [xs[offsets[i] + t] for t in range(5) for i in rank if LENGTHS[i] > t]
    np.testing.assert_array_equal(np.array(got_steps), np.array(expected_steps))
    assert np.array(got_sizes).tolist() == [sum(n > t for n in LENGTHS) for t in range(5)]
    np.testing.assert_array_equal(np.array(got_back), xs)
    assert got_back.recursive_sequence_lengths() == [LENGTHS]
    np.testing.assert_array_equal(np.array(got_reordered), rows[rank])
    np.testing.assert_array_equal(np.array(got_shrunk), rows[rank][:sum(n > 2 for n in LENGTHS)])


def test_a_rank_table_that_is_not_one_is_refused_by_name():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[2], dtype="float32", lod_level=1)
        table = fluid.layers.lod_rank_table(x)
        length = fluid.layers.max_sequence_len(table)
    bogus = main.global_block().create_var(name="bogus", dtype="float32", shape=[3, 2], persistable=True)
    main.global_block().ops[-1]._rename_input(table.name, bogus.name)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        with pytest.raises(Exception, match="RankTable \\('bogus'\\) is fp32 \\[3, 2\\], not a rank table"):
            exe.run(main, feed={"x": lod_tensor(np.zeros((sum(LENGTHS), 2), "float32")),
                                "bogus": np.zeros((3, 2), "float32")}, fetch_list=[length])
    with pytest.raises(Exception, match="not a rank table"):
        scope.find_var("bogus").get_lod_rank_table()


def test_while_over_tensor_arrays_gives_each_input_its_gradient():
    """Fluid 0.14's test_while_op net: mem[i + 1] = d[i] + mem[i] over three steps, loss the
    mean of mem[3] = d0 + d1 + d2: each input's gradient is 1/10 everywhere."""
    main, startup = fluid.Program(), fluid.Program()
    layers = fluid.layers
    with fluid.program_guard(main, startup):
        ds = [layers.data(name="d%d" % k, shape=[10], append_batch_size=False, dtype="float32") for k in range(3)]
        for d in ds:
            d.stop_gradient = False
        i = layers.zeros(shape=[1], dtype="int64")
        i.stop_gradient = True
        mem_array = layers.array_write(x=layers.zeros(shape=[10], dtype="float32"), i=i)
        data_array = layers.array_write(x=ds[0], i=i)
        for d in ds[1:]:
            i = layers.increment(i)
            layers.array_write(d, i, array=data_array)
        i = layers.zeros(shape=[1], dtype="int64")
        i.stop_gradient = True
        limit = layers.fill_constant(shape=[1], dtype="int64", value=3)
        cond = layers.less_than(x=i, y=limit)
        loop = layers.While(cond=cond)
        with loop.block():
            d = layers.array_read(array=data_array, i=i)
            prev = layers.array_read(array=mem_array, i=i)
            result = layers.sums(input=[d, prev])
            i = layers.increment(x=i, in_place=True)
            layers.array_write(result, i=i, array=mem_array)
            layers.less_than(x=i, y=limit, cond=cond)
        loss = layers.mean(layers.array_read(array=mem_array, i=i))
        fluid.backward.append_backward(loss)
    rng = np.random.RandomState(1)
    feed = {"d%d" % k: rng.uniform(size=10).astype("float32") for k in range(3)}
    _, fetched = run(main, startup, feed, [loss] + ["d%d@GRAD" % k for k in range(3)])
    np.testing.assert_allclose(np.array(fetched[0]), [sum(feed.values()).mean()], rtol=1e-6)
    for grad in fetched[1:]:
        np.testing.assert_allclose(np.array(grad), np.full(10, 0.1, "float32"), rtol=1e-6)


def test_a_loop_overwriting_a_tensor_on_the_gradient_path_is_refused_by_name():
    main, startup = fluid.Program(), fluid.Program()
    layers = fluid.layers
    with fluid.program_guard(main, startup):
        x = layers.data(name="x", shape=[3], dtype="float32")
        h = layers.fc(input=x, size=3)
        i = layers.zeros(shape=[1], dtype="int64")
        limit = layers.fill_constant(shape=[1], dtype="int64", value=2)
        cond = layers.less_than(x=i, y=limit)
        loop = layers.While(cond=cond)
        with loop.block():
            layers.assign(layers.fc(input=h, size=3, act="tanh"), output=h)
            layers.increment(x=i, in_place=True)
            layers.less_than(x=i, y=limit, cond=cond)
        loss = layers.mean(h)
        with pytest.raises(Exception, match="carries '%s' from step to step.*tensor array" % h.name):
            fluid.backward.append_backward(loss)


def test_a_dynamic_rnn_classifier_learns_which_of_two_tokens_comes_first():
    """Sequences of noise tokens holding one 1 and one 2: the class is whether 1 comes first,
    which only a state carried along the sequence can tell."""
    rng = np.random.RandomState(5)
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup):
        words = fluid.layers.data(name="words", shape=[1], dtype="int64", lod_level=1)
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        emb = fluid.layers.embedding(input=words, size=[10, 8])
        rnn = fluid.layers.DynamicRNN()
        with rnn.block():
            word = rnn.step_input(emb)
            prev = rnn.memory(shape=[16], value=0.0)
            hidden = fluid.layers.fc(input=[word, prev], size=16, act="tanh")
            rnn.update_memory(prev, hidden)
            rnn.output(hidden)
        last = fluid.layers.sequence_last_step(rnn())
        predict = fluid.layers.fc(input=last, size=2, act="softmax")
        cost = fluid.layers.mean(fluid.layers.cross_entropy(input=predict, label=label))
        fluid.optimizer.Adam(learning_rate=0.02).minimize(cost)

    def batch():
        lengths = rng.randint(2, 7, size=16).tolist()
        seqs, labels = [], []
        for n in lengths:
            s = rng.randint(3, 10, size=n)
            a, b = rng.choice(n, 2, replace=False)
            s[a], s[b] = 1, 2
            seqs.append(s)
            labels.append([int(a < b)])
        ids = np.concatenate(seqs).reshape(-1, 1).astype("int64")
        return {"words": fluid.create_lod_tensor(ids, [lengths], fluid.CPUPlace()),
                "label": np.array(labels, "int64")}

    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        costs = [float(exe.run(main, feed=batch(), fetch_list=[cost])[0][0]) for _ in range(300)]
    first, last_ten = np.mean(costs[:10]), np.mean(costs[-10:])
    assert last_ten < 0.5 * first, (first, last_ten)
