"""fluid.layers.beam_search and beam_search_decode: one step against a selection written
here (prefixes grouped by source, ended prefixes, accumulated scores or probabilities,
candidates without ids), and a whole decoding loop (While, tensor arrays, beam_search,
beam_search_decode) on a fixed next-word table against beam search written over whole
sentences in numpy; bad input refused by name."""
import numpy as np
import pytest

import rill.fluid as fluid

END = 1


def lod_tensor(values, lengths):
    return fluid.create_lod_tensor(values, lengths, fluid.CPUPlace())


def expected_step(pre_ids, pre_scores, ids, scores, sources, beam, accumulated):
    """The selection, as (ids, scores, prefix offsets) per the op's contract."""
    chosen = [[] for _ in pre_ids]
    for s in range(len(sources) - 1):
        candidates = []
        for r in range(sources[s], sources[s + 1]):
            if pre_ids[r] == END:
                candidates.append((pre_scores[r], r, END))
                continue
            for k in range(scores.shape[1]):
                score = scores[r, k] if accumulated else pre_scores[r] + np.log(scores[r, k])
                candidates.append((score, r, ids[r, k] if ids is not None else k))
        best = sorted(candidates, key=lambda c: (c[0], c[1]), reverse=True)[:beam]
        if all(c[2] == END and pre_ids[c[1]] == END for c in best):
            continue
        for score, r, i in best:
            chosen[r].append((i, score))
    offsets = np.cumsum([0] + [len(c) for c in chosen]).tolist()
    flat = [c for row in chosen for c in row]
    return [c[0] for c in flat], [c[1] for c in flat], offsets


def run_step(pre_ids, pre_scores, ids, scores, prefixes, beam, accumulated=True):
    """beam_search of one step over sources of `prefixes` rows (one prefix a row), ids None
    for candidates without ids: the fetched (selected ids, their scores, parents), LoD kept."""
    rows, k = scores.shape
    lengths = [prefixes, [1] * rows]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        p_ids = fluid.layers.data(name="pre_ids", shape=[1], dtype="int64", lod_level=2)
        p_scores = fluid.layers.data(name="pre_scores", shape=[1], dtype="float32", lod_level=2)
        c_ids = fluid.layers.data(name="ids", shape=[k], dtype="int64", lod_level=2) if ids is not None else None
        c_scores = fluid.layers.data(name="scores", shape=[k], dtype="float32", lod_level=2)
        selected = fluid.layers.beam_search(p_ids, p_scores, c_ids, c_scores, beam_size=beam, end_id=END,
                                            is_accumulated=accumulated, return_parent_idx=True)
    feed = {"pre_ids": lod_tensor(pre_ids.reshape(-1, 1), lengths),
            "pre_scores": lod_tensor(pre_scores.reshape(-1, 1), lengths), "scores": lod_tensor(scores, lengths)}
    if ids is not None:
        feed["ids"] = lod_tensor(ids, lengths)
    return fluid.Executor(fluid.CPUPlace()).run(main, feed=feed, fetch_list=list(selected), return_numpy=False)


@pytest.mark.parametrize("accumulated,with_ids", [(True, True), (False, True), (True, False)])
def test_one_step_selects_the_best_candidates_of_each_source(accumulated, with_ids):
    rng = np.random.RandomState(4)
    # Three sources with 2, 1 and 3 prefixes; prefix 2 (source 1's only one) and prefix 4 ended.
    prefixes = [2, 1, 3]
    rows = sum(prefixes)
    pre_ids = np.array([5, 7, END, 3, END, 9], "int64")
    pre_scores = rng.uniform(-3, -1, rows).astype("float32")
    k = 4
    scores = (rng.uniform(-6, -1, (rows, k)) if accumulated else rng.uniform(0.01, 1, (rows, k))).astype("float32")
    ids = rng.randint(2, 50, (rows, k)).astype("int64")
    got_ids, got_scores, got_parents = run_step(pre_ids, pre_scores, ids if with_ids else None, scores, prefixes, 3,
                                                accumulated)
    want_ids, want_scores, want_offsets = expected_step(pre_ids, pre_scores, ids if with_ids else None, scores,
                                                        [0, 2, 3, 6], 3, accumulated)
    # Source 1's only prefix had ended, so its one candidate (end again) drops it.
    assert np.array(got_ids).ravel().tolist() == want_ids
    np.testing.assert_allclose(np.array(got_scores).ravel(), want_scores, rtol=1e-6)
    assert got_ids.lod() == [[0, 2, 3, 6], want_offsets]
    assert np.array(got_parents).tolist() == [r for r in range(rows) for _ in range(want_offsets[r + 1] -
                                                                                      want_offsets[r])]


def test_many_sources_split_across_threads_select_as_one_by_one():
    """Hundreds of sources of 1 to 4 prefixes of 48 candidates (some prefixes ended, and
    some sources wholly so, which drops them): enough that the sources are split across the
    intra-op threads; the selection is still each source's, in row order."""
    rng = np.random.RandomState(6)
    prefixes = [int(n) for n in rng.randint(1, 5, 600)]
    rows, k = sum(prefixes), 48
    pre_ids = rng.randint(2, 50, rows).astype("int64")
    pre_ids[rng.rand(rows) < 0.2] = END
    starts = np.cumsum([0] + prefixes)
    pre_ids[starts[7]:starts[8]] = END  # a source whose prefixes all ended
    pre_scores = rng.uniform(-3, -1, rows).astype("float32")
    scores = rng.uniform(-6, -1, (rows, k)).astype("float32")
    ids = rng.randint(2, 50, (rows, k)).astype("int64")
    got_ids, got_scores, got_parents = run_step(pre_ids, pre_scores, ids, scores, prefixes, 4)
    want_ids, want_scores, want_offsets = expected_step(pre_ids, pre_scores, ids, scores, starts.tolist(), 4, True)
    assert want_offsets[starts[8]] == want_offsets[starts[7]]  # the ended source is dropped
    assert np.array(got_ids).ravel().tolist() == want_ids
    np.testing.assert_array_equal(np.array(got_scores).ravel(), want_scores)
    assert got_ids.lod() == [starts.tolist(), want_offsets]
    assert np.array(got_parents).tolist() == [r for r in range(rows) for _ in range(want_offsets[r + 1] -
                                                                                      want_offsets[r])]


def test_a_beam_wider_than_the_candidates_keeps_them_all():
    """beam_size 2^30 over two sources of 3 and 2 prefixes of 4 candidates: every candidate
    kept, the room for them as many as there are, not the beam's width."""
    rng = np.random.RandomState(3)
    pre_ids, pre_scores = np.array([4, 5, 6, 7, 8], "int64"), rng.uniform(-3, -1, 5).astype("float32")
    scores, ids = rng.uniform(-6, -1, (5, 4)).astype("float32"), rng.randint(2, 50, (5, 4)).astype("int64")
    got_ids, got_scores, _ = run_step(pre_ids, pre_scores, ids, scores, [3, 2], 1 << 30)
    want_ids, want_scores, want_offsets = expected_step(pre_ids, pre_scores, ids, scores, [0, 3, 5], 1 << 30, True)
    assert want_offsets == [0, 4, 8, 12, 16, 20]
    assert np.array(got_ids).ravel().tolist() == want_ids
    np.testing.assert_array_equal(np.array(got_scores).ravel(), want_scores)


def numpy_beam_search(logp, starts, beam, steps):
    """Beam search over whole sentences: each hypothesis extends by every word (an ended one
    only by END, at no cost); the best `beam` are kept; a source whose kept hypotheses had
    all ended stops. Returns each source's sentences (END once) and scores, best first."""
    results = []
    for start in starts:
        beams = [([start], 0.0)]
        for _ in range(steps):
            grown = []
            for tokens, score in beams:
                if tokens[-1] == END and len(tokens) > 1:
                    grown.append((tokens + [END], score))
                else:
                    grown += [(tokens + [v], score + logp[tokens[-1], v]) for v in range(logp.shape[1])]
            best = sorted(grown, key=lambda h: h[1], reverse=True)[:beam]
            if all(t[-1] == END and t[-2] == END for t, _ in best):
                break
            beams = best
        sentences = []
        for tokens, score in sorted(beams, key=lambda h: h[1], reverse=True):
            while len(tokens) > 2 and tokens[-1] == END and tokens[-2] == END:
                tokens = tokens[:-1]
            sentences.append((tokens, score))
        results.append(sentences)
    return results


# Three sources; and 3000 (the five start words in a random order), enough that the decode
# splits its sources across the intra-op threads.
@pytest.mark.parametrize("starts", [[2, 4, 5], np.random.RandomState(9).randint(2, 7, 3000).tolist()])
def test_a_decoding_loop_finds_the_sentences_beam_search_over_whole_sentences_finds(starts):
    vocab, beam, steps = 7, 3, 5
    rng = np.random.RandomState(8)
    logits = rng.normal(size=(vocab, vocab))
    logits[:, END] += 1.0  # sentences end, some before the last step
    logp = (logits - np.log(np.exp(logits).sum(1, keepdims=True))).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    layers = fluid.layers
    with fluid.program_guard(main, startup):
        init_ids = layers.data(name="init_ids", shape=[1], dtype="int64", lod_level=2)
        init_scores = layers.data(name="init_scores", shape=[1], dtype="float32", lod_level=2)
        counter = layers.zeros(shape=[1], dtype="int64")
        limit = layers.fill_constant(shape=[1], dtype="int64", value=steps)
        ids_array = layers.array_write(init_ids, counter)
        scores_array = layers.array_write(init_scores, counter)
        cond = layers.less_than(x=counter, y=limit)
        loop = layers.While(cond=cond)
        with loop.block():
            pre_ids = layers.array_read(ids_array, counter)
            pre_scores = layers.array_read(scores_array, counter)
            table = fluid.ParamAttr(name="logp", initializer=fluid.initializer.NumpyArrayInitializer(logp))
            next_logp = layers.lod_reset(layers.embedding(pre_ids, size=[vocab, vocab], param_attr=table), pre_scores)
            top_scores, top_ids = layers.topk(next_logp, k=beam)
            accumulated = layers.elementwise_add(top_scores, layers.reshape(pre_scores, shape=[-1]), axis=0)
            sel_ids, sel_scores = layers.beam_search(pre_ids, pre_scores, top_ids, accumulated, beam_size=beam,
                                                     end_id=END)
            layers.increment(counter, in_place=True)
            layers.array_write(sel_ids, counter, array=ids_array)
            layers.array_write(sel_scores, counter, array=scores_array)
            layers.logical_and(layers.less_than(x=counter, y=limit), layers.logical_not(layers.is_empty(sel_ids)),
                               out=cond)
        sentences, sentence_scores = layers.beam_search_decode(ids_array, scores_array, beam_size=beam, end_id=END)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    n = len(starts)
    feed = {"init_ids": lod_tensor(np.array(starts, "int64").reshape(-1, 1), [[1] * n, [1] * n]),
            "init_scores": lod_tensor(np.zeros((n, 1), "float32"), [[1] * n, [1] * n])}
    got_ids, got_scores = exe.run(main, feed=feed, fetch_list=[sentences, sentence_scores], return_numpy=False)
    per_source, per_sentence = got_ids.lod()
    words, word_scores = np.array(got_ids).ravel(), np.array(got_scores).ravel()
    expected = numpy_beam_search(logp.astype("float64"), starts, beam, steps)
    assert any(tokens[-1] == END for source in expected for tokens, _ in source)  # the test covers ended beams
    for s, source in enumerate(expected):
        got = [(words[per_sentence[h]:per_sentence[h + 1]].tolist(), word_scores[per_sentence[h + 1] - 1])
               for h in range(per_source[s], per_source[s + 1])]
        assert [tokens for tokens, _ in got] == [tokens for tokens, _ in source], s
        np.testing.assert_allclose([score for _, score in got], [score for _, score in source], rtol=1e-5)


def test_bad_input_is_refused_by_name():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=2)
        scores = fluid.layers.data(name="scores", shape=[3], dtype="float32", lod_level=2)
        with pytest.raises(TypeError, match="pre_scores"):
            fluid.layers.beam_search(ids, ids, None, scores, beam_size=2, end_id=END)
        with pytest.raises(TypeError, match="ids"):
            fluid.layers.beam_search_decode(fluid.layers.create_array("float32"), fluid.layers.create_array("float32"),
                                            beam_size=2, end_id=END)
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        p_ids = fluid.layers.data(name="pre_ids", shape=[1], dtype="int64", lod_level=2)
        p_scores = fluid.layers.data(name="pre_scores", shape=[1], dtype="float32", lod_level=2)
        c_scores = fluid.layers.data(name="scores", shape=[2], dtype="float32", lod_level=2)
        out = fluid.layers.beam_search(p_ids, p_scores, None, c_scores, beam_size=2, end_id=END)
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {"pre_ids": lod_tensor(np.array([[3], [4]], "int64"), [[2], [1, 1]]),
            "pre_scores": lod_tensor(np.zeros((3, 1), "float32"), [[3], [1, 1, 1]]),
            "scores": lod_tensor(np.zeros((2, 2), "float32"), [[2], [1, 1]])}
    with pytest.raises(Exception, match="one value per row of scores"):
        exe.run(main, feed=feed, fetch_list=list(out))


@pytest.mark.parametrize("second_lod,error", [
    # Step 1 gives source 1 prefixes from row 1, where step 0's candidates of source 1 start at row 2.
    ([[0, 1, 3], [0, 1, 2, 3]], "source 1's prefixes start at row 1 but its candidates at step 0 at row 2"),
    # A LoD whose last level ends past the step's rows.
    ([[0, 2, 3], [0, 1, 2, 5]], "Ids' LoD does not fit it"),
])
def test_decode_refuses_steps_that_do_not_chain(second_lod, error):
    """beam_search_decode over steps a beam search could not have made: each step's prefixes
    must be the step before's candidates, source by source, and a LoD must fit its rows."""
    scope = fluid.core.Scope()
    ids, scores = scope.var("ids").get_lod_tensor_array(), scope.var("scores").get_lod_tensor_array()
    for lod, values in (([[0, 1, 2], [0, 2, 3]], [5, 6, 7]), (second_lod, [8, 9, 10])):
        for array, dtype in ((ids, "int64"), (scores, "float32")):
            step = fluid.core.LoDTensor()
            step.set(np.array(values, dtype).reshape(-1, 1), fluid.CPUPlace())
            step.set_lod(lod)
            array.append(step)
    main = fluid.Program()
    block = main.global_block()
    for name in ("ids", "scores", "sentences", "sentence_scores"):
        block.create_var(name=name, persistable=True)
    block.append_op(type="beam_search_decode", inputs={"Ids": ["ids"], "Scores": ["scores"]},
                    outputs={"SentenceIds": ["sentences"], "SentenceScores": ["sentence_scores"]},
                    attrs={"beam_size": 2, "end_id": END})
    with pytest.raises(Exception, match=error):
        fluid.Executor(fluid.CPUPlace()).run(main, fetch_list=[], scope=scope)


def test_decode_puts_each_sources_sentences_best_first_ties_in_step_order_and_nan_last():
    """A source's hypotheses come out by their final score, best first; equal scores keep the
    last step's order, and a NaN score (a diverged model's) ranks below every number."""
    scope = fluid.core.Scope()
    ids, scores = scope.var("ids").get_lod_tensor_array(), scope.var("scores").get_lod_tensor_array()
    nan = float("nan")
    # Step 0: one source, one prefix, one candidate; step 1: that candidate's five.
    for lod, words, values in (([[0, 1], [0, 1]], [5], [0.0]),
                               ([[0, 1], [0, 5]], [10, 11, 12, 13, 14], [nan, 1.0, nan, 1.0, 2.0])):
        for array, data in ((ids, np.array(words, "int64")), (scores, np.array(values, "float32"))):
            step = fluid.core.LoDTensor()
            step.set(data.reshape(-1, 1), fluid.CPUPlace())
            step.set_lod(lod)
            array.append(step)
    main = fluid.Program()
    block = main.global_block()
    for name in ("ids", "scores", "sentences", "sentence_scores"):
        block.create_var(name=name, persistable=True)
    block.append_op(type="beam_search_decode", inputs={"Ids": ["ids"], "Scores": ["scores"]},
                    outputs={"SentenceIds": ["sentences"], "SentenceScores": ["sentence_scores"]},
                    attrs={"beam_size": 5, "end_id": END})
    fluid.Executor(fluid.CPUPlace()).run(main, fetch_list=[], scope=scope)
    sentences = scope.find_var("sentences").get_tensor()
    assert sentences.lod() == [[0, 5], [0, 2, 4, 6, 8, 10]]
    assert np.array(sentences).ravel().tolist() == [5, 14, 5, 11, 5, 13, 5, 10, 5, 12]
    np.testing.assert_array_equal(np.array(scope.find_var("sentence_scores").get_tensor()).ravel(),
                                  [0, 2, 0, 1, 0, 1, 0, nan, 0, nan])
