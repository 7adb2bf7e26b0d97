"""fluid.layers.linear_chain_crf, crf_decoding, chunk_eval, ctc_greedy_decoder, edit_distance
and cos_sim against references written independently here: the CRF's cost against PyTorch
summing every tag path of each sequence (3 tags, lengths 3, 1, 0, 4, 2: at most 81 paths), its
gradients against PyTorch's autograd through that sum; the decoding against the best of all
paths; chunk_eval against a chunker that reads a chunk as a run of tags continuing one
another; cos_sim against torch.nn.functional.cosine_similarity; ctc_greedy_decoder against
itertools.groupby of each best path; edit_distance against the distance's recursive
definition. LoD and padded (length) forms both; bad input is refused by name."""
import functools
import itertools

import numpy as np
import pytest
import torch

import rill
import rill.fluid as fluid

E, D = 4, 3
LENGTHS = [3, 1, 0, 4, 2]


def lod_tensor(values, lengths=LENGTHS):
    return fluid.create_lod_tensor(values, [lengths], fluid.CPUPlace())


def split(rows, lengths=LENGTHS):
    offsets = np.cumsum([0] + list(lengths))
    return [rows[offsets[i]:offsets[i + 1]] for i in range(len(lengths))]


def path_score(x, trans, path):
    """score(path) of Fluid's CRF: start + end + emissions + transitions (torch or numpy)."""
    s = trans[0, path[0]] + trans[1, path[-1]]
    for k, tag in enumerate(path):
        s = s + x[k, tag]
        if k:
            s = s + trans[2 + path[k - 1], tag]
    return s


def brute_force_cost(x, trans, labels):
    """log Z - score(labels), Z summed over every path: 0 for an empty sequence."""
    if len(labels) == 0:
        return x.sum() * 0
    scores = torch.stack([path_score(x, trans, p) for p in itertools.product(range(D), repeat=len(labels))])
    return torch.logsumexp(scores, 0) - path_score(x, trans, list(labels))


def best_path(x, trans):
    paths = list(itertools.product(range(D), repeat=len(x)))
    return list(paths[int(np.argmax([path_score(x, trans, p) for p in paths]))])


def test_linear_chain_crf_cost_and_gradients_match_every_path_summed_in_pytorch():
    rng = np.random.RandomState(2)
    feats = rng.uniform(-1, 1, (sum(LENGTHS), E))
    labels = rng.randint(0, D, (sum(LENGTHS), 1)).astype("int64")
    weights = rng.uniform(-1, 1, (len(LENGTHS), 1))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        f = fluid.layers.data(name="f", shape=[E], dtype="float64", lod_level=1)
        label = fluid.layers.data(name="label", shape=[1], dtype="int64", lod_level=1)
        w = fluid.layers.data(name="w", shape=[1], dtype="float64")
        emission = fluid.layers.fc(f, D, bias_attr=False, param_attr=fluid.ParamAttr(name="emit_w"))
        cost = fluid.layers.linear_chain_crf(
            emission, label,
            param_attr=fluid.ParamAttr(name="crfw", initializer=fluid.initializer.Uniform(-0.5, 0.5)))
        loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(cost, w))
        fluid.backward.append_backward(loss)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        emit_w = np.array(scope.find_var("emit_w").get_tensor())
        crfw = np.array(scope.find_var("crfw").get_tensor())
        got_cost, got_emit_grad, got_crf_grad = exe.run(
            main, feed={"f": lod_tensor(feats), "label": lod_tensor(labels), "w": weights},
            fetch_list=[cost, "emit_w@GRAD", "crfw@GRAD"])

    tw = torch.tensor(emit_w, requires_grad=True)
    tt = torch.tensor(crfw, requires_grad=True)
    x = torch.from_numpy(feats) @ tw
    costs = torch.stack([brute_force_cost(xs, tt, ls[:, 0])
                         for xs, ls in zip(split(x), split(labels))])
    (costs * torch.from_numpy(weights[:, 0])).sum().backward()
    assert got_cost.shape == (len(LENGTHS), 1)
    np.testing.assert_allclose(got_cost[:, 0], costs.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert got_cost[2, 0] == 0  # the empty sequence
    np.testing.assert_allclose(got_emit_grad, tw.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got_crf_grad, tt.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_crf_decoding_finds_the_best_path_of_each_sequence():
    rng = np.random.RandomState(3)
    xs = rng.uniform(-2, 2, (sum(LENGTHS), D))
    labels = rng.randint(0, D, (sum(LENGTHS), 1)).astype("int64")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[D], dtype="float64", lod_level=1)
        label = fluid.layers.data(name="label", shape=[1], dtype="int64", lod_level=1)
        fluid.layers.linear_chain_crf(
            x, label, param_attr=fluid.ParamAttr(name="crfw", initializer=fluid.initializer.Uniform(-1, 1)))
        path = fluid.layers.crf_decoding(x, fluid.ParamAttr(name="crfw"))
        marks = fluid.layers.crf_decoding(x, fluid.ParamAttr(name="crfw"), label=label)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        crfw = np.array(scope.find_var("crfw").get_tensor())
        path, marks = exe.run(main, feed={"x": lod_tensor(xs), "label": lod_tensor(labels)},
                              fetch_list=[path, marks], return_numpy=False)
    assert path.recursive_sequence_lengths() == [LENGTHS]
    path = np.array(path)
    assert path.shape == (sum(LENGTHS), 1) and path.dtype == np.int64
    want = sum((best_path(x, crfw) for x in split(xs) if len(x)), [])
    np.testing.assert_array_equal(path[:, 0], want)
    np.testing.assert_array_equal(np.array(marks)[:, 0], (np.array(want) == labels[:, 0]).astype("int64"))


def test_padded_sequences_decode_and_cost_as_their_lod_form():
    rng = np.random.RandomState(4)
    lengths = [3, 1, 0, 4]
    steps = max(lengths)
    padded = rng.uniform(-2, 2, (len(lengths), steps, D))
    labels = rng.randint(0, D, (len(lengths), steps)).astype("int64")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[len(lengths), steps, D], dtype="float64", append_batch_size=False)
        label = fluid.layers.data(name="label", shape=[len(lengths), steps], dtype="int64", append_batch_size=False)
        length = fluid.layers.data(name="length", shape=[len(lengths)], dtype="int64", append_batch_size=False)
        cost = fluid.layers.linear_chain_crf(
            x, label, param_attr=fluid.ParamAttr(name="crfw", initializer=fluid.initializer.Uniform(-1, 1)),
            length=length)
        path = fluid.layers.crf_decoding(x, fluid.ParamAttr(name="crfw"), length=length)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        crfw = np.array(scope.find_var("crfw").get_tensor())
        got_cost, got_path = exe.run(main, feed={"x": padded, "label": labels, "length": np.array(lengths, "int64")},
                                     fetch_list=[cost, path])
    t = torch.from_numpy(crfw)
    for b, n in enumerate(lengths):
        want = brute_force_cost(torch.from_numpy(padded[b, :n]), t, labels[b, :n]).item()
        assert got_cost[b, 0] == pytest.approx(want, rel=1e-10, abs=1e-12)
        want_path = best_path(padded[b, :n], crfw) if n else []
        np.testing.assert_array_equal(got_path[b, :n], want_path)
        assert not got_path[b, n:].any()  # padding decodes to 0


def test_linear_chain_crf_refuses_a_label_outside_the_tags_and_a_misshaped_transition():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[D], dtype="float32", lod_level=1)
        label = fluid.layers.data(name="label", shape=[1], dtype="int64", lod_level=1)
        cost = fluid.layers.linear_chain_crf(x, label, param_attr=fluid.ParamAttr(name="crfw"))
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    xs = np.zeros((3, D), "float32")
    with pytest.raises(rill.Error, match="Label\\[1\\] = 3 is not a tag"):
        exe.run(main, feed={"x": lod_tensor(xs, [3]), "label": lod_tensor(np.array([[0], [3], [1]], "int64"), [3])},
                fetch_list=[cost])
    with pytest.raises(rill.Error, match="Transition \\[3, 3\\] must be \\[D \\+ 2, D\\]"):
        fluid.global_scope().find_var("crfw").get_tensor().set(np.zeros((3, 3), "float32"), fluid.CPUPlace())
        exe.run(main, feed={"x": lod_tensor(xs, [3]), "label": lod_tensor(np.zeros((3, 1), "int64"), [3])},
                fetch_list=[cost])


# chunk_eval: each scheme's tag positions (begin, inside, end, single; None where it has none).
SCHEMES = {"IOB": (2, 0, 1, None, None), "IOE": (2, None, 0, 1, None), "IOBES": (4, 0, 1, 2, 3),
           "plain": (1, None, None, None, None)}


def chunks(tags, scheme, types):
    """The (first, last, type) chunks of one sequence: a tag continues the chunk before it when
    it has the same type, is an inside or end tag (any tag in plain), and the tag before it
    does not close its chunk (an end or single tag)."""
    tag_types, begin, inside, end, single = SCHEMES[scheme]
    continuing = {0} if scheme == "plain" else {inside, end}
    found = []
    for k, tag in enumerate(tags):
        pos, kind = tag % tag_types, tag // tag_types
        if kind == types:
            continue
        if found and found[-1][1] == k - 1 and found[-1][2] == kind and pos in continuing and \
                tags[k - 1] % tag_types not in (end, single):
            found[-1][1] = k
        else:
            found.append([k, k, kind])
    return [tuple(c) for c in found]


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
@pytest.mark.parametrize("many", [False, True])
@pytest.mark.parametrize("types", [3, 40, 70])
def test_chunk_eval_counts_chunks_as_runs_of_continuing_tags(scheme, many, types):
    """A few short sequences, or (many) hundreds of up to 600 tags, which the counting
    splits across threads; with few chunk types (the kernel reads a table of every pair of
    tags) and with many (it works each pair out)."""
    tag_types = SCHEMES[scheme][0]
    rng = np.random.RandomState(len(scheme))
    lengths = [6, 0, 1, 9, 12] + ([int(n) for n in rng.randint(0, 600, 200)] if many else [])
    truth = rng.randint(0, types * tag_types + 1, (sum(lengths), 1)).astype("int64")
    found = truth.copy()
    flip = rng.rand(len(found)) < 0.3
    found[flip, 0] = rng.randint(0, types * tag_types + 1, int(flip.sum()))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        inference = fluid.layers.data(name="inference", shape=[1], dtype="int64", lod_level=1)
        label = fluid.layers.data(name="label", shape=[1], dtype="int64", lod_level=1)
        metrics = fluid.layers.chunk_eval(inference, label, scheme, types, excluded_chunk_types=[1])
    exe = fluid.Executor(fluid.CPUPlace())
    precision, recall, f1, n_found, n_true, n_correct = exe.run(
        main, feed={"inference": lod_tensor(found, lengths), "label": lod_tensor(truth, lengths)},
        fetch_list=list(metrics))
    want_found = want_true = want_correct = 0
    for a, b in zip(split(found[:, 0], lengths), split(truth[:, 0], lengths)):
        ca = {c for c in chunks(list(a), scheme, types) if c[2] != 1}
        cb = {c for c in chunks(list(b), scheme, types) if c[2] != 1}
        want_found, want_true, want_correct = want_found + len(ca), want_true + len(cb), want_correct + len(ca & cb)
    assert (int(n_found[0]), int(n_true[0]), int(n_correct[0])) == (want_found, want_true, want_correct)
    assert want_correct > 0 and want_correct < want_true
    p, r = want_correct / want_found, want_correct / want_true
    np.testing.assert_allclose([precision[0], recall[0], f1[0]], [p, r, 2 * p * r / (p + r)], rtol=1e-6)


def test_chunk_eval_names_a_tag_outside_the_schemes_range():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        inference = fluid.layers.data(name="inference", shape=[1], dtype="int64", lod_level=1)
        label = fluid.layers.data(name="label", shape=[1], dtype="int64", lod_level=1)
        metrics = fluid.layers.chunk_eval(inference, label, "IOB", 2)
    tags = np.zeros((300, 1), "int64")
    wrong = tags.copy()
    wrong[250, 0] = -3  # in the second sequence
    for found, truth in ((wrong, tags), (tags, wrong)):
        with pytest.raises(rill.Error, match=r"tag -3 at position 250 is outside 0 \.\. 4"):
            fluid.Executor(fluid.CPUPlace()).run(
                main, feed={"inference": lod_tensor(found, [100, 200]), "label": lod_tensor(truth, [100, 200])},
                fetch_list=list(metrics))


@pytest.mark.parametrize("y_rows", [5, 1])
def test_cos_sim_matches_pytorch_forward_and_gradients(y_rows):
    rng = np.random.RandomState(5)
    xs, ys = rng.uniform(-1, 1, (5, 2, 3)), rng.uniform(-1, 1, (y_rows, 2, 3))
    g = rng.uniform(-1, 1, (5, 1))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.create_parameter([5, 2, 3], "float64", name="x")
        y = fluid.layers.create_parameter([y_rows, 2, 3], "float64", name="y")
        w = fluid.layers.data(name="w", shape=[1], dtype="float64")
        out = fluid.layers.cos_sim(x, y)
        fluid.backward.append_backward(fluid.layers.reduce_sum(fluid.layers.elementwise_mul(out, w)))
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        scope.find_var("x").get_tensor().set(xs, fluid.CPUPlace())
        scope.find_var("y").get_tensor().set(ys, fluid.CPUPlace())
        got, dx, dy = exe.run(main, feed={"w": g}, fetch_list=[out, "x@GRAD", "y@GRAD"])
    tx, ty = torch.tensor(xs, requires_grad=True), torch.tensor(ys, requires_grad=True)
    want = torch.nn.functional.cosine_similarity(tx.reshape(5, -1), ty.reshape(y_rows, -1).expand(5, -1), dim=1)
    (want * torch.from_numpy(g[:, 0])).sum().backward()
    np.testing.assert_allclose(got[:, 0], want.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(dy, ty.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_a_crf_tagger_learns_chunks_and_decodes_them():
    """Words 0-9 form chunks of type 0, words 10-19 of type 1 (IOB: B-0 0, I-0 1, B-1 2, I-1 3,
    O 4); an embedding, an LSTM and an fc score the tags, linear_chain_crf trains them, and
    crf_decoding's tags, through chunk_eval, find the chunks."""
    rng = np.random.RandomState(6)
    lengths = [int(n) for n in rng.randint(1, 15, size=32)]
    words = rng.randint(0, 30, size=sum(lengths))
    tags = np.full(len(words), 4, "int64")
    for s, e in zip(np.cumsum([0] + lengths[:-1]), np.cumsum(lengths)):
        for k in range(s, e):
            kind = words[k] // 10
            if kind < 2:
                tags[k] = 2 * kind + (1 if k > s and words[k - 1] // 10 == kind else 0)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        word = fluid.layers.data(name="word", shape=[1], dtype="int64", lod_level=1)
        target = fluid.layers.data(name="target", shape=[1], dtype="int64", lod_level=1)
        emb = fluid.layers.embedding(word, size=[30, 16])
        hidden, _ = fluid.layers.dynamic_lstm(fluid.layers.fc(emb, 4 * 16), 4 * 16, use_peepholes=False)
        scores = fluid.layers.fc(fluid.layers.concat([emb, hidden], axis=1), 5)
        cost = fluid.layers.mean(fluid.layers.linear_chain_crf(scores, target, param_attr=fluid.ParamAttr(name="crfw")))
        fluid.optimizer.Adam(learning_rate=0.02).minimize(cost)
        decoded = fluid.layers.crf_decoding(scores, fluid.ParamAttr(name="crfw"))
        f1 = fluid.layers.chunk_eval(decoded, target, "IOB", 2)[2]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    feed = {"word": lod_tensor(words.reshape(-1, 1).astype("int64"), lengths),
            "target": lod_tensor(tags.reshape(-1, 1), lengths)}
    losses, scores_f1 = [], []
    for _ in range(100):
        loss, f = exe.run(main, feed=feed, fetch_list=[cost, f1])
        losses.append(float(loss[0]))
        scores_f1.append(float(f[0]))
    assert losses[-1] < 0.5 * losses[0], losses
    assert scores_f1[-1] > 0.95 and scores_f1[0] < 0.5, scores_f1


def test_ctc_greedy_decoder_merges_repeats_and_drops_blanks():
    rng = np.random.RandomState(8)
    lengths, classes, blank = [6, 0, 1, 9], 4, 0
    probs = rng.uniform(0, 1, (sum(lengths), classes)).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[classes], dtype="float32", lod_level=1)
        decoded = fluid.layers.ctc_greedy_decoder(x, blank)
        padded_x = fluid.layers.data(name="padded_x", shape=[len(lengths), max(lengths), classes], dtype="float32",
                                     append_batch_size=False)
        length = fluid.layers.data(name="length", shape=[len(lengths), 1], dtype="int64", append_batch_size=False)
        padded, padded_length = fluid.layers.ctc_greedy_decoder(padded_x, blank, input_length=length,
                                                                padding_value=-2)
    exe = fluid.Executor(fluid.CPUPlace())
    padded_probs = np.zeros((len(lengths), max(lengths), classes), "float32")
    for b, seq in enumerate(split(probs, lengths)):
        padded_probs[b, :len(seq)] = seq
    got, got_padded, got_length = exe.run(
        main, feed={"x": lod_tensor(probs, lengths), "padded_x": padded_probs,
                    "length": np.array(lengths, "int64").reshape(-1, 1)},
        fetch_list=[decoded, padded, padded_length], return_numpy=False)
    want = [[k for k, _ in itertools.groupby(seq.argmax(1)) if k != blank] for seq in split(probs, lengths)]
    assert got.recursive_sequence_lengths() == [[len(w) for w in want]]
    np.testing.assert_array_equal(np.array(got)[:, 0], sum(want, []))
    got_padded, got_length = np.array(got_padded), np.array(got_length)
    np.testing.assert_array_equal(got_length[:, 0], [len(w) for w in want])
    for b, w in enumerate(want):
        np.testing.assert_array_equal(got_padded[b], w + [-2] * (max(lengths) - len(w)))
    # Nothing left at all: one -1, as Paddle's.
    all_blank = np.zeros((3, classes), "float32")
    all_blank[:, blank] = 1
    nothing = exe.run(main, feed={"x": lod_tensor(all_blank, [3]), "padded_x": padded_probs,
                                  "length": np.array(lengths, "int64").reshape(-1, 1)}, fetch_list=[decoded])[0]
    np.testing.assert_array_equal(nothing, [[-1]])


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("merge_repeated", [True, False])
def test_ctc_align_of_many_long_sequences_matches_its_definition(dtype, merge_repeated):
    """Hundreds of sequences of up to a thousand tokens of 3 classes (runs and blanks
    everywhere, some sequences empty): enough that the passes split across threads. The
    LoD and the padded forms keep what the definition keeps, in order."""
    rng = np.random.RandomState(11)
    lengths = [int(n) for n in rng.randint(0, 1000, 300)]
    tokens = rng.randint(0, 3, (sum(lengths), 1)).astype(dtype)
    blank = 1
    main = fluid.Program()
    block = main.global_block()
    block.create_var(name="ids", shape=[-1, 1], dtype=dtype, lod_level=1)
    block.create_var(name="padded", shape=[len(lengths), max(lengths)], dtype=dtype)
    block.create_var(name="length", shape=[len(lengths)], dtype=dtype)
    for name in ("out", "padded_out", "padded_length"):
        block.create_var(name=name)
    attrs = {"blank": blank, "merge_repeated": merge_repeated, "padding_value": -7}
    block.append_op(type="ctc_align", inputs={"Input": ["ids"]}, outputs={"Output": ["out"]}, attrs=attrs)
    block.append_op(type="ctc_align", inputs={"Input": ["padded"], "InputLength": ["length"]},
                    outputs={"Output": ["padded_out"], "OutputLength": ["padded_length"]}, attrs=attrs)
    padded = np.zeros((len(lengths), max(lengths)), dtype)
    for b, seq in enumerate(split(tokens, lengths)):
        padded[b, :len(seq)] = seq[:, 0]
    got, got_padded, got_length = fluid.Executor(fluid.CPUPlace()).run(
        main, feed={"ids": lod_tensor(tokens, lengths), "padded": padded, "length": np.array(lengths, dtype)},
        fetch_list=["out", "padded_out", "padded_length"], return_numpy=False)

    def kept(seq):
        runs = [k for k, _ in itertools.groupby(seq)] if merge_repeated else list(seq)
        return [k for k in runs if k != blank]
    want = [kept(seq[:, 0]) for seq in split(tokens, lengths)]
    assert got.recursive_sequence_lengths() == [[len(w) for w in want]]
    np.testing.assert_array_equal(np.array(got)[:, 0], sum(want, []))
    got_padded = np.array(got_padded)
    np.testing.assert_array_equal(np.array(got_length)[:, 0], [len(w) for w in want])
    for b, w in enumerate(want):
        np.testing.assert_array_equal(got_padded[b], w + [-7] * (max(lengths) - len(w)))


def levenshtein(a, b):
    """The edit distance by its definition: the cheapest of deleting a's first token,
    inserting b's, or matching (or substituting) the two."""
    @functools.lru_cache(maxsize=None)
    def d(i, j):
        if i == len(a) or j == len(b):
            return len(a) - i + len(b) - j
        return min(d(i + 1, j) + 1, d(i, j + 1) + 1, d(i + 1, j + 1) + (a[i] != b[j]))
    return d(0, 0)


def edit_distances(rng, vocabulary, hyp_lengths, ref_lengths, *options):
    """Random LoD hypotheses and references of tokens below `vocabulary`, and what running
    edit_distance on them with each of `options` (keyword arguments) fetches: each one's
    distances, then the first one's sequence count."""
    hyps = rng.randint(0, vocabulary, (sum(hyp_lengths), 1)).astype("int64")
    refs = rng.randint(0, vocabulary, (sum(ref_lengths), 1)).astype("int64")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        h = fluid.layers.data(name="h", shape=[1], dtype="int64", lod_level=1)
        r = fluid.layers.data(name="r", shape=[1], dtype="int64", lod_level=1)
        outputs = [fluid.layers.edit_distance(h, r, **o) for o in options]
    fetched = fluid.Executor(fluid.CPUPlace()).run(
        main, feed={"h": lod_tensor(hyps, hyp_lengths), "r": lod_tensor(refs, ref_lengths)},
        fetch_list=[outputs[0][0], outputs[0][1]] + [o[0] for o in outputs[1:]])
    return [hyps, refs] + list(fetched)


def test_edit_distance_matches_its_definition():
    hyp_lengths, ref_lengths = [5, 0, 3, 7], [4, 2, 3, 6]
    hyps, refs, got, got_count, got_normalized, got_ignoring = edit_distances(
        np.random.RandomState(9), 4, hyp_lengths, ref_lengths,
        dict(normalized=False), {}, dict(normalized=False, ignored_tokens=[3]))
    pairs = list(zip(split(hyps[:, 0], hyp_lengths), split(refs[:, 0], ref_lengths)))
    want = [levenshtein(tuple(a), tuple(b)) for a, b in pairs]
    np.testing.assert_array_equal(got[:, 0], want)
    assert int(got_count[0]) == len(pairs)
    np.testing.assert_allclose(got_normalized[:, 0], np.array(want) / ref_lengths, rtol=1e-6)
    np.testing.assert_array_equal(
        got_ignoring[:, 0], [levenshtein(tuple(a[a != 3]), tuple(b[b != 3])) for a, b in pairs])

    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        h = fluid.layers.data(name="h", shape=[4, 7], dtype="int64", append_batch_size=False)
        r = fluid.layers.data(name="r", shape=[4, 6], dtype="int64", append_batch_size=False)
        hl = fluid.layers.data(name="hl", shape=[4], dtype="int64", append_batch_size=False)
        rl = fluid.layers.data(name="rl", shape=[4], dtype="int64", append_batch_size=False)
        padded, _ = fluid.layers.edit_distance(h, r, normalized=False, input_length=hl, label_length=rl)
    padded_h, padded_r = np.full((4, 7), 9, "int64"), np.full((4, 6), 9, "int64")
    for b, (a, c) in enumerate(pairs):
        padded_h[b, :len(a)], padded_r[b, :len(c)] = a, c
    feed = {"h": padded_h, "r": padded_r, "hl": np.array(hyp_lengths, "int64"), "rl": np.array(ref_lengths, "int64")}
    got_padded = fluid.Executor(fluid.CPUPlace()).run(main, feed=feed, fetch_list=[padded])[0]
    np.testing.assert_array_equal(got_padded[:, 0], want)


def test_edit_distance_of_many_pairs_split_across_threads():
    """Enough pairs of long enough sequences for the distances to be worked out in chunks on
    the intra-op threads: each is still its pair's."""
    rng = np.random.RandomState(11)
    hyp_lengths, ref_lengths = [[int(n) for n in rng.randint(1, 60, 600)] for _ in range(2)]
    hyps, refs, got, _ = edit_distances(rng, 5, hyp_lengths, ref_lengths, dict(normalized=False))
    pairs = zip(split(hyps[:, 0], hyp_lengths), split(refs[:, 0], ref_lengths))
    np.testing.assert_array_equal(got[:, 0], [levenshtein(tuple(a), tuple(b)) for a, b in pairs])


def table_levenshtein(a, b):
    """The edit distance by its table, a row at a time: for sequences too long to recurse on."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        diagonal, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (x != y))
    return row[-1]


@pytest.mark.parametrize("vocabulary", [3, 1 << 40])
def test_edit_distance_of_sequences_longer_than_a_word_of_rows(vocabulary):
    """Sequences of up to 300 tokens, so that the shorter of a pair spans up to five 64-row
    words, across each word's edge; tokens from a few (long runs of equal ones) or from 2^40
    (almost all distinct, and far from small integers)."""
    rng = np.random.RandomState(12)
    hyp_lengths = [int(n) for n in rng.randint(0, 300, 40)] + [64, 65, 128, 1]
    ref_lengths = [int(n) for n in rng.randint(1, 300, 40)] + [64, 64, 129, 200]
    hyps, refs, got, _ = edit_distances(rng, vocabulary, hyp_lengths, ref_lengths, dict(normalized=False))
    pairs = zip(split(hyps[:, 0], hyp_lengths), split(refs[:, 0], ref_lengths))
    np.testing.assert_array_equal(got[:, 0], [table_levenshtein(list(a), list(b)) for a, b in pairs])


def test_edit_distance_refuses_hypotheses_without_references():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        h = fluid.layers.data(name="h", shape=[1], dtype="int64", lod_level=1)
        r = fluid.layers.data(name="r", shape=[1], dtype="int64", lod_level=1)
        distance, _ = fluid.layers.edit_distance(h, r)
    tokens = np.zeros((4, 1), "int64")
    with pytest.raises(rill.Error, match="Hyps holds 3 sequences and Refs 2"):
        fluid.Executor(fluid.CPUPlace()).run(
            main, feed={"h": lod_tensor(tokens, [1, 1, 2]), "r": lod_tensor(tokens, [2, 2])}, fetch_list=[distance])


def ctc_program(padded, norm_by_times=False, classes=5, blank=0):
    """warpctc of logits and int32 labels, LoD or padded; the loss's gradient by the logits
    through sum(loss * w)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        if padded:
            x = fluid.layers.data(name="x", shape=[-1, -1, classes], dtype="float64", append_batch_size=False)
            y = fluid.layers.data(name="y", shape=[-1, -1], dtype="int32", append_batch_size=False)
            x_len = fluid.layers.data(name="x_len", shape=[-1], dtype="int64", append_batch_size=False)
            y_len = fluid.layers.data(name="y_len", shape=[-1], dtype="int64", append_batch_size=False)
            loss = fluid.layers.warpctc(x, y, blank=blank, norm_by_times=norm_by_times, input_length=x_len,
                                        label_length=y_len)
        else:
            x = fluid.layers.data(name="x", shape=[classes], dtype="float64", lod_level=1)
            y = fluid.layers.data(name="y", shape=[1], dtype="int32", lod_level=1)
            loss = fluid.layers.warpctc(x, y, blank=blank, norm_by_times=norm_by_times)
        x.stop_gradient = False
        w = fluid.layers.data(name="w", shape=[-1, 1], dtype="float64", append_batch_size=False)
        fluid.backward.append_backward(fluid.layers.reduce_sum(fluid.layers.elementwise_mul(loss, w)))
    return main, loss


@pytest.mark.parametrize("padded,norm_by_times", [(False, False), (False, True), (True, False)])
def test_warpctc_matches_pytorch_ctc_loss_and_its_gradient(padded, norm_by_times):
    """Frames 4, 1, 6, 5, 3 and labels 2, 1, 3 (one repeated id), 0 and 3: the third fits
    only through the blank between its repeats, the last needs more frames than it has (loss
    0, no gradient: PyTorch's zero_infinity)."""
    rng = np.random.RandomState(7)
    classes, blank = 5, 2
    frames, label_lengths = [4, 1, 6, 5, 3], [2, 1, 3, 0, 3]
    labels = [[1, 3], [4], [3, 3, 0], [], [1, 1, 4]]  # the last needs 4 frames, has 3
    xs = [rng.normal(size=(t, classes)) for t in frames]
    weights = rng.uniform(0.5, 2, (len(frames), 1))
    main, loss = ctc_program(padded, norm_by_times, classes, blank)
    if padded:
        t_max, l_max = max(frames), max(label_lengths)
        x_pad = np.zeros((t_max, len(frames), classes))
        y_pad = np.zeros((len(frames), l_max), "int32")
        for b, (x, label) in enumerate(zip(xs, labels)):
            x_pad[:len(x), b] = x
            y_pad[b, :len(label)] = label
        feed = {"x": x_pad, "y": y_pad, "x_len": np.array(frames, "int64"),
                "y_len": np.array(label_lengths, "int64"), "w": weights}
    else:
        feed = {"x": lod_tensor(np.concatenate(xs), frames),
                "y": lod_tensor(np.array(sum(labels, []), "int32").reshape(-1, 1), label_lengths), "w": weights}
    got_loss, got_grad = fluid.Executor(fluid.CPUPlace()).run(main, feed=feed, fetch_list=[loss, "x@GRAD"])

    for b, (x, label) in enumerate(zip(xs, labels)):
        tx = torch.tensor(x, requires_grad=True)
        expected = torch.nn.functional.ctc_loss(
            torch.log_softmax(tx, 1).unsqueeze(1), torch.tensor([label], dtype=torch.long).reshape(1, -1),
            torch.tensor([len(x)]), torch.tensor([len(label)]), blank=blank, reduction="sum", zero_infinity=True)
        (expected * weights[b, 0] / (len(x) if norm_by_times else 1)).backward()
        np.testing.assert_allclose(got_loss[b, 0], expected.item(), rtol=1e-9, atol=1e-12, err_msg=str(b))
        grad = got_grad[:len(x), b] if padded else split(got_grad, frames)[b]
        np.testing.assert_allclose(grad, tx.grad.numpy(), rtol=1e-8, atol=1e-12, err_msg=str(b))
    assert got_loss[4, 0] == 0


def test_warpctc_is_exact_where_every_alignment_is_beyond_a_doubles_range():
    """Class 1 is 800 below the others in every frame, so each alignment of a label holding
    it has a probability under a double's least (exp(-800) is 0): the loss is still about
    800, as PyTorch's log-space ctc_loss gives, and so is the gradient; a second sequence of
    ordinary logits in the same batch is unaffected."""
    classes, blank = 3, 0
    rng = np.random.RandomState(3)
    far = rng.normal(size=(4, classes))
    far[:, 1] -= 800
    near = rng.normal(size=(5, classes))
    xs, labels = [far, near], [[1, 2], [2, 1]]
    main, loss = ctc_program(False, classes=classes, blank=blank)
    feed = {"x": lod_tensor(np.concatenate(xs), [4, 5]),
            "y": lod_tensor(np.array(sum(labels, []), "int32").reshape(-1, 1), [2, 2]), "w": np.ones((2, 1))}
    got_loss, got_grad = fluid.Executor(fluid.CPUPlace()).run(main, feed=feed, fetch_list=[loss, "x@GRAD"])
    for b, (x, label) in enumerate(zip(xs, labels)):
        tx = torch.tensor(x, requires_grad=True)
        expected = torch.nn.functional.ctc_loss(
            torch.log_softmax(tx, 1).unsqueeze(1), torch.tensor([label], dtype=torch.long),
            torch.tensor([len(x)]), torch.tensor([len(label)]), blank=blank, reduction="sum")
        expected.backward()
        np.testing.assert_allclose(got_loss[b, 0], expected.item(), rtol=1e-9, err_msg=str(b))
        np.testing.assert_allclose(split(got_grad, [4, 5])[b], tx.grad.numpy(), rtol=1e-7, atol=1e-10, err_msg=str(b))
    assert got_loss[0, 0] > 790


def test_warpctc_refuses_a_label_holding_the_blank():
    main, loss = ctc_program(False, classes=4, blank=0)
    feed = {"x": lod_tensor(np.zeros((3, 4)), [3]), "y": lod_tensor(np.array([[2], [0]], "int32"), [2]),
            "w": np.ones((1, 1))}
    with pytest.raises(rill.Error, match="Label of sequence 0 holds 0, not a class other than the blank"):
        fluid.Executor(fluid.CPUPlace()).run(main, feed=feed, fetch_list=[loss])
