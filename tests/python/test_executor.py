"""Executor.run: feeds, fetches, preparing once, errors, Ctrl-C, zero-copy feeds."""
import signal
import subprocess
import sys
import os

import numpy as np
import pytest

import rill
import rill.fluid as fluid
from rill.fluid import layers


def fit_a_line():
    x = layers.data(name="x", shape=[13], dtype="float32")
    y = layers.data(name="y", shape=[1], dtype="float32")
    y_predict = layers.fc(input=x, size=1, act=None)
    cost = layers.square_error_cost(input=y_predict, label=y)
    avg_cost = layers.mean(cost)
    return x, y, y_predict, avg_cost


def test_fit_a_line_trains_to_the_true_weights(exe):
    _, _, _, avg_cost = fit_a_line()
    fluid.optimizer.SGD(learning_rate=0.01).minimize(avg_cost)
    exe.run(fluid.default_startup_program())
    rng = np.random.RandomState(0)
    w = rng.randn(13, 1).astype("float32")
    for _ in range(400):
        xs = rng.randn(32, 13).astype("float32")
        loss, = exe.run(fluid.default_main_program(), feed={"x": xs, "y": xs @ w + 0.5}, fetch_list=[avg_cost])
    assert loss.shape == (1,) and loss[0] < 1e-3
    np.testing.assert_allclose(fluid.fetch_var("fc_0.w_0"), w, atol=0.02)
    np.testing.assert_allclose(fluid.fetch_var("fc_0.b_0"), [0.5], atol=0.02)
    tensor = fluid.global_scope().find_var("fc_0.w_0").get_tensor()
    assert tensor.shape() == [13, 1] and np.array(tensor).dtype == np.float32


def test_prepares_once_per_program_version(exe):
    x = layers.data(name="x", shape=[2], dtype="float32")
    y = layers.scale(x, scale=3.0)
    main = fluid.default_main_program()
    a = np.ones((4, 2), "float32")
    exe.run(main, feed={"x": a}, fetch_list=[y])
    def held():
        return [entry[1] for forms in exe._cache.values() for entry in forms.values()]
    prepared = held()
    out, = exe.run(main, feed={"x": a}, fetch_list=[y])
    assert held() == prepared  # the same prepared program, reused
    np.testing.assert_allclose(out, 3 * a)
    z = layers.scale(y, scale=2.0)  # an edit: prepared again
    out, = exe.run(main, feed={"x": a}, fetch_list=[z])
    np.testing.assert_allclose(out, 6 * a)
    exe.close()
    assert not exe._cache
    with pytest.raises(RuntimeError, match="closed"):
        exe.run(main, feed={"x": a}, fetch_list=[z])


def test_feed_errors_name_the_variable(exe):
    x = fluid.data(name="x", shape=[None, 3], dtype="float32")
    y = layers.scale(x, scale=2.0)
    with pytest.raises(rill.Error, match=r"feed 'x': the program declares fp32 \[-1, 3\], the value fed is fp32 \[2, 4\]") as e:
        exe.run(feed={"x": np.ones((2, 4), "float32")}, fetch_list=[y])
    assert isinstance(e.value, ValueError)
    with pytest.raises(rill.Error, match="fp64|float64|dtype"):
        exe.run(feed={"x": np.ones((2, 3), "float64")}, fetch_list=[y])
    with pytest.raises(ValueError, match="feed 'x' .* is not given"):
        exe.run(feed={}, fetch_list=[y])
    with pytest.raises(LookupError, match="no variable"):
        exe.run(feed={"x": np.ones((1, 3), "float32"), "nope": np.ones(3, "float32")}, fetch_list=[y])
    with pytest.raises(TypeError):
        exe.run(feed=[1, 2], fetch_list=[y])
    out, = exe.run(feed={"x": [[1, 2, 3]]}, fetch_list=[y])  # a list takes the declared dtype
    np.testing.assert_allclose(out, [[2, 4, 6]])


def test_a_data_layer_takes_its_feed_as_it_is(exe):
    # Paddle checks only fluid.data's feeds (need_check_feed): a layers.data declared float32
    # and fed int32 holds int32, which the op then reads (expand's times, slice's bounds).
    x = layers.data(name="x", shape=[2, 3], append_batch_size=False, dtype="float32")
    times = layers.data(name="times", shape=[2], append_batch_size=False)
    y = layers.expand(x, expand_times=times)
    a = np.arange(6, dtype="float32").reshape(2, 3)
    out, = exe.run(feed={"x": a, "times": np.array([2, 1], "int32")}, fetch_list=[y])
    np.testing.assert_array_equal(out, np.tile(a, (2, 1)))


def test_runtime_error_names_block_and_op(exe):
    a = layers.data(name="a", shape=[3], dtype="float32")
    b = layers.data(name="b", shape=[5], dtype="float32")
    out = layers.mul(a, b)
    with pytest.raises(rill.Error, match=r"block 0, op \d+ \(mul"):
        exe.run(feed={"a": np.ones((2, 3), "float32"), "b": np.ones((2, 5), "float32")}, fetch_list=[out])


def test_rill_empty_refuses_a_bad_shape_naming_it():
    for shape in ((-1, 3), (2.5,), (True, 2)):
        with pytest.raises(ValueError, match=r"rill.empty: shape .*: each dimension must be a non-negative int"):
            rill.empty(shape)
    assert rill.empty(4).shape == (4,) and rill.empty((0, 3)).shape == (0, 3)


def test_rill_empty_arrays_are_borrowable():
    a = rill.empty((3, 16), "float32")
    assert a.shape == (3, 16) and a.dtype == np.float32 and rill.is_borrowable(a)
    assert not rill.is_borrowable(a[:, 1:]) and not rill.is_borrowable(rill.empty((2,), "float32"))


def test_fed_arrays_are_never_written(exe):
    x = layers.data(name="x", shape=[16], dtype="float32")
    # sgd writes ParamOut = Param in place: here the parameter is the fed array itself.
    lr = layers.fill_constant(shape=[1], dtype="float32", value=1.0)
    block = fluid.default_main_program().global_block()
    block.append_op(type="sgd", inputs={"Param": x, "Grad": x, "LearningRate": lr}, outputs={"ParamOut": x})
    for feed in (rill.empty((4, 16)), np.ones((4, 16), "float32")[:, :]):
        feed[...] = 1.0
        out, = exe.run(feed={"x": feed}, fetch_list=[x])
        np.testing.assert_array_equal(out, np.zeros((4, 16), "float32"))
        np.testing.assert_array_equal(feed, np.ones((4, 16), "float32"))


def test_scope_guard_and_lod_tensor(exe):
    x = layers.create_global_var(shape=[2], value=7.0, dtype="float32", persistable=True, name="g")
    scope = fluid.core.Scope()
    with fluid.scope_guard(scope):
        exe.run(fluid.default_startup_program())
        assert fluid.global_scope() is scope
        np.testing.assert_array_equal(fluid.fetch_var("g"), [7, 7])
    assert fluid.global_scope().find_var("g") is None
    t = fluid.LoDTensor()
    t.set(np.arange(6, dtype="float32").reshape(2, 3), fluid.CPUPlace())
    t.set_lod([[0, 1, 2]])
    assert t.shape() == [2, 3] and t.lod() == [[0, 1, 2]]
    y = layers.data(name="y", shape=[3], dtype="float32")
    out, = exe.run(feed={"y": t}, fetch_list=[layers.scale(y, scale=2.0)])
    np.testing.assert_array_equal(out, 2 * np.arange(6).reshape(2, 3))
    assert x.name == "g"


def test_return_numpy_false_gives_tensors_with_their_lod(exe):
    """Fluid's return_numpy=False: each fetched value a LoDTensor (a copy) keeping its LoD,
    here the per-image counts iou_similarity passes on from X."""
    prog = fluid.Program()
    block = prog.global_block()
    block.create_var(name="x", shape=[3, 4], dtype="float32")
    block.create_var(name="y", shape=[2, 4], dtype="float32")
    block.create_var(name="iou")
    block.append_op(type="iou_similarity", inputs={"X": ["x"], "Y": ["y"]}, outputs={"Out": ["iou"]}, attrs={})
    boxes = np.array([[0, 0, 1, 1], [0, 0, 0.5, 1], [2, 2, 3, 3]], "float32")
    x = fluid.LoDTensor()
    x.set(boxes, fluid.CPUPlace())
    x.set_recursive_sequence_lengths([[1, 2]])
    feed = {"x": x, "y": boxes[:2]}
    tensor, = exe.run(prog, feed=feed, fetch_list=["iou"], return_numpy=False)
    assert isinstance(tensor, fluid.LoDTensor)
    assert tensor.recursive_sequence_lengths() == [[1, 2]]
    np.testing.assert_allclose(np.array(tensor), [[1, 0.5], [0.5, 1], [0, 0]], atol=1e-6)
    array, = exe.run(prog, feed=feed, fetch_list=["iou"])
    assert isinstance(array, np.ndarray)
    np.testing.assert_array_equal(array, np.array(tensor))


# A run only Ctrl-C ends, in two shapes: the main block loops, or the main block waits on a
# channel while a go block loops (with one worker the loop runs on the calling thread, with
# two it may run on the other while the calling thread waits for work).
LOOPING = r'''
i = layers.fill_constant(shape=[1], dtype="int64", value=0)
cond = layers.fill_constant(shape=[1], dtype="bool", value=True)
loop = fluid.While(cond=cond)
with loop.block():
    layers.Print(i, first_n=1, message="looping")
    layers.increment(i, in_place=True)
'''
INTERRUPT = r'''
import sys
import rill.fluid as fluid
from rill.fluid import layers
from rill.fluid import concurrency
if sys.argv[1] == "main":
    exec(LOOPING)
    fetched = i
else:
    ch = concurrency.make_channel(dtype=fluid.core.VarDesc.VarType.LOD_TENSOR)
    with concurrency.Go():
        exec(LOOPING)
        concurrency.channel_send(ch, i)
    fetched = layers.fill_constant(shape=[1], dtype="int64", value=0)
    concurrency.channel_recv(ch, fetched)
try:
    fluid.Executor(fluid.CPUPlace()).run(fetch_list=[fetched])
except KeyboardInterrupt:
    print("KeyboardInterrupt caught", flush=True)
    sys.exit(3)
'''


@pytest.mark.parametrize("looping, workers", [("main", "1"), ("go", "1"), ("go", "2")])
def test_ctrl_c_stops_a_run_with_keyboard_interrupt(looping, workers):
    script = "LOOPING = %r\n%s" % (LOOPING, INTERRUPT)
    proc = subprocess.Popen([sys.executable, "-c", script, looping], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=dict(os.environ, RILL_WORKERS=workers))
    try:
        for line in proc.stdout:  # waits until the loop has started
            if "looping" in line:
                break
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 3, rest
    assert "KeyboardInterrupt caught" in rest


def test_the_gil_is_released_while_a_program_runs(exe):
    import threading
    # A run of about a tenth of a second, many scheduler quanta: a loaded machine still
    # gives this thread a core during it.
    steps = 3000000
    i = layers.fill_constant(shape=[1], dtype="int64", value=0)
    n = layers.fill_constant(shape=[1], dtype="int64", value=steps)
    cond = layers.less_than(i, n)
    loop = fluid.While(cond=cond)
    with loop.block():
        layers.increment(i, in_place=True)
        layers.less_than(i, n, cond=cond)
    result = {}
    entering = threading.Event()

    def run():
        entering.set()
        result.update(out=exe.run(fetch_list=[i]))

    runner = threading.Thread(target=run)
    runner.start()
    entering.wait()
    spins = 0
    while runner.is_alive():  # runs Python only while the run does not hold the GIL
        spins += 1
    runner.join()
    assert result["out"][0].tolist() == [steps]
    assert spins > 10


def test_non_contiguous_and_list_feeds(exe):
    x = layers.data(name="x", shape=[3], dtype="float32")
    y = layers.scale(x, scale=1.0)
    base = np.arange(12, dtype="float32").reshape(3, 4)
    view = base.T[:, :3]  # strided: copied in C order
    out, = exe.run(feed={"x": view}, fetch_list=[y])
    np.testing.assert_array_equal(out, np.ascontiguousarray(view))


def test_an_executor_holds_prepared_programs_only_while_their_program_lives(exe):
    import gc
    for i in range(50):
        program, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(program, startup):
            x = layers.data(name="x", shape=[1], dtype="float32")
            y = layers.scale(x, scale=float(i))
        out, = exe.run(program, feed={"x": np.ones((1, 1), "float32")}, fetch_list=[y])
        assert out[0, 0] == i
    gc.collect()
    assert exe._prepared_count() <= 1  # the last program may still be referenced by its loop variables
    del program, x, y
    gc.collect()
    assert exe._prepared_count() == 0


def test_list_feeds_refuse_what_numpy_would_change_silently(exe):
    i32 = layers.data(name="i32", shape=[1], dtype="int32", append_batch_size=False)
    i64 = layers.data(name="i64", shape=[1], dtype="int64", append_batch_size=False)
    out32, out64 = layers.scale(i32, scale=1.0), layers.scale(i64, scale=1.0)
    with pytest.raises(ValueError, match=r"feed 'i32': 1099511627776 is outside int32's range \[-2147483648, 2147483647\]"):
        exe.run(feed={"i32": [2 ** 40], "i64": [1]}, fetch_list=[out32])
    with pytest.raises(ValueError, match="feed 'i64': float64 values for a int64 variable"):
        exe.run(feed={"i32": [1], "i64": [1.7]}, fetch_list=[out64])
    with pytest.raises(ValueError, match="feed 'i64': values of mixed kinds or too large"):
        exe.run(feed={"i32": [1], "i64": [2 ** 70]}, fetch_list=[out64])
    a, b = exe.run(feed={"i32": [-7], "i64": [2 ** 40]}, fetch_list=[out32, out64])
    assert a.dtype == np.int32 and a[0] == -7 and b.dtype == np.int64 and b[0] == 2 ** 40


def test_data_feeder_shapes_samples_as_declared():
    img = layers.data(name="img", shape=[2, 2], dtype="float32")
    label = layers.data(name="label", shape=[1], dtype="int64")
    feeder = fluid.DataFeeder(feed_list=[img, "label"], place=fluid.CPUPlace())
    batch = feeder.feed([(np.zeros(4), 3), (np.ones(4), 5)])  # LoDTensors, as Fluid's
    img_values, labels = np.array(batch["img"]), np.array(batch["label"])
    assert batch["img"].shape() == [2, 2, 2] and img_values.dtype == np.float32
    assert labels.tolist() == [[3], [5]] and labels.dtype == np.int64
    with pytest.raises(ValueError, match="2 variables"):
        feeder.feed([(np.zeros(4),)])
    words = layers.data(name="words", shape=[1], dtype="int64", lod_level=2)
    batch = fluid.DataFeeder([words], fluid.CPUPlace()).feed([([[1, 2, 3], [4, 5]],), ([[6, 7, 8, 9]],)])
    assert batch["words"].recursive_sequence_lengths() == [[2, 1], [3, 2, 4]]
    assert np.array(batch["words"]).ravel().tolist() == list(range(1, 10))
    with pytest.raises(ValueError, match="nested 2 deep"):
        fluid.DataFeeder([words], fluid.CPUPlace()).feed([(7,)])


def test_two_threads_run_two_programs_in_one_scope(exe):
    import threading
    programs = []
    for k in (2.0, 3.0):
        prog = fluid.Program()
        with fluid.program_guard(prog, fluid.Program()):
            x = layers.data(name="x", shape=[4], dtype="float32")
            programs.append((prog, layers.scale(x, scale=k), k))
    errors = []

    def loop(prog, y, k):
        try:
            for i in range(200):
                xs = np.full((2, 4), i, "float32")
                out, = exe.run(prog, feed={"x": xs}, fetch_list=[y])
                if not np.array_equal(out, k * xs):
                    errors.append((k, i, out))
        except Exception as e:  # reported below
            errors.append(e)
    threads = [threading.Thread(target=loop, args=p) for p in programs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_the_profiler_records_runs_and_reports(exe, tmp_path, capsys):
    import json
    x = layers.data(name="x", shape=[4], dtype="float32")
    y = layers.relu(layers.scale(x, scale=2.0))
    path = tmp_path / "trace.json"
    with fluid.profiler.profiler("CPU", "calls", str(path)):
        for _ in range(3):
            exe.run(feed={"x": np.ones((2, 4), "float32")}, fetch_list=[y])
    report = capsys.readouterr().out
    assert "Profiling Report" in report and "Sorted by calls" in report
    rows = {line.split()[0]: line.split() for line in report.splitlines()[5:] if line.strip()}
    assert rows["scale"][1] == "3" and rows["relu"][1] == "3" and rows["feed"][1] == "3", rows
    events = json.loads(path.read_text())["traceEvents"]
    spans = [e for e in events if e["ph"] == "X" and e["name"] == "scale"]
    assert len(spans) == 3 and spans[0]["args"]["inputs"] == "X=fp32[2,4]"
    with pytest.raises(RuntimeError, match="not recording"):
        fluid.profiler.stop_profiler()
    with pytest.raises(ValueError, match="sorted_key"):
        with fluid.profiler.profiler("CPU", "loudest"):
            pass
    with fluid.profiler.profiler("CPU", None, None):  # nothing left recording; no trace file
        exe.run(feed={"x": np.ones((1, 4), "float32")}, fetch_list=[y])


def test_weighted_average_of_fetched_values():
    avg = fluid.average.WeightedAverage()
    with pytest.raises(ValueError, match="no data"):
        avg.eval()
    avg.add(value=np.array([1.0, 2.0]), weight=3)
    avg.add(value=np.array([3.0, 6.0]), weight=np.array([1], "int64"))
    np.testing.assert_allclose(avg.eval(), [(3 + 3) / 4.0, (6 + 6) / 4.0])
    with pytest.raises(ValueError, match="weight"):
        avg.add(value=1.0, weight=np.array([1, 2]))
    avg.reset()
    avg.add(value=2.0, weight=1)
    assert avg.eval() == 2.0


def test_parallel_executor_and_compiled_program_run_the_program_as_the_executor_does(exe):
    x = layers.data(name="x", shape=[3], dtype="float32")
    y = layers.data(name="y", shape=[1], dtype="float32")
    pred = layers.fc(input=x, size=1, bias_attr=False, param_attr=fluid.ParamAttr(name="w"))
    loss = layers.mean(layers.square_error_cost(pred, y))
    fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    exe.run(fluid.default_startup_program())
    pe = fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name)
    assert pe.device_count == 1
    w = np.array([[1.0], [-2.0], [0.5]], "float32")
    rng = np.random.RandomState(0)
    for step in range(100):
        xs = rng.randn(8, 3).astype("float32")
        feed = {"x": xs, "y": xs @ w}
        first, = pe.run(fetch_list=[loss.name], feed=[feed] if step % 2 else feed)
    assert first < 1e-3
    tester = fluid.ParallelExecutor(use_cuda=False, main_program=fluid.default_main_program().clone(for_test=True),
                                    share_vars_from=pe)
    compiled = fluid.CompiledProgram(fluid.default_main_program()).with_data_parallel(loss_name=loss.name)
    xs = rng.randn(4, 3).astype("float32")
    tested, = tester.run(fetch_list=[pred], feed={"x": xs, "y": xs @ w})
    np.testing.assert_allclose(tested, xs @ w, atol=0.05)
    exe.run(compiled, feed={"x": xs, "y": xs @ w}, fetch_list=[loss])
    with pytest.raises(ValueError, match="same size as places"):
        pe.run(fetch_list=[loss], feed=[{}, {}])
    with pytest.raises(ValueError, match="loss_name"):
        fluid.ParallelExecutor(use_cuda=False, loss_name="no_such_loss")
    with pytest.raises(TypeError, match="CompiledProgram takes a Program"):
        fluid.CompiledProgram("main")
