"""Fluid's high-level API on Rill: readers (rill.reader, rill.batch), fluid.Trainer with its
events and checkpoints, fluid.Inferencer, the InferenceTranspiler's batch_norm folding and
nets.img_conv_group."""
import os

import numpy as np
import pytest

import rill
import rill.fluid as fluid
from rill.fluid import layers


def numbers(n):
    def reader():
        return iter(range(n))
    return reader


def test_reader_decorators():
    assert sorted(rill.reader.shuffle(numbers(10), buf_size=3)()) == list(range(10))
    assert list(rill.reader.buffered(numbers(5), size=2)()) == list(range(5))
    assert list(rill.reader.chain(numbers(2), numbers(3))()) == [0, 1, 0, 1, 2]
    assert list(rill.reader.firstn(numbers(10), 3)()) == [0, 1, 2]
    assert list(rill.reader.map_readers(lambda a, b: a * b, numbers(3), numbers(4))()) == [0, 1, 4]
    assert list(rill.reader.compose(numbers(2), numbers(2))()) == [(0, 0), (1, 1)]
    with pytest.raises(rill.reader.ComposeNotAligned):
        list(rill.reader.compose(numbers(2), numbers(3))())
    assert list(rill.reader.compose(numbers(2), numbers(3), check_alignment=False)()) == [(0, 0), (1, 1)]
    assert list(rill.reader.xmap_readers(lambda x: x * 10, numbers(20), 4, 2, order=True)()) == \
        [10 * i for i in range(20)]
    assert sorted(rill.reader.xmap_readers(lambda x: x + 1, numbers(20), 3, 4)()) == list(range(1, 21))
    calls = []

    def counted():
        calls.append(1)
        return iter([1, 2])
    cached = rill.reader.cache(counted)
    assert list(cached()) == list(cached()) == [1, 2] and len(calls) == 1
    assert list(rill.batch(numbers(5), 2)()) == [[0, 1], [2, 3], [4]]
    assert list(rill.batch(numbers(5), 2, drop_last=True)()) == [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match="batch_size"):
        rill.batch(numbers(5), 0)


def test_an_error_in_a_buffered_or_mapped_reader_reaches_the_consumer():
    def broken():
        yield 1
        raise IOError("the disk went away")
    with pytest.raises(IOError, match="disk went away"):
        list(rill.reader.buffered(broken, 2)())

    def bad(x):
        raise KeyError("no such sample")
    with pytest.raises(KeyError, match="no such sample"):
        list(rill.reader.xmap_readers(bad, numbers(3), 2, 2)())


W = np.array([[1.0], [-2.0], [0.5]], "float32")


def line_samples(n, seed):
    def reader():
        rng = np.random.RandomState(seed)
        for _ in range(n):
            x = rng.randn(3).astype("float32")
            yield x, (x @ W).astype("float32")
    return reader


def line_net():
    x = layers.data(name="x", shape=[3], dtype="float32")
    y = layers.data(name="y", shape=[1], dtype="float32")
    pred = layers.fc(input=x, size=1, bias_attr=False, param_attr=fluid.ParamAttr(name="w"))
    return layers.mean(layers.square_error_cost(pred, y))


def predict_net():
    x = layers.data(name="x", shape=[3], dtype="float32")
    return layers.fc(input=x, size=1, bias_attr=False, param_attr=fluid.ParamAttr(name="w"))


def test_trainer_trains_tests_and_hands_its_parameters_to_an_inferencer(tmp_path):
    trainer = fluid.Trainer(train_func=line_net, optimizer_func=lambda: fluid.optimizer.SGD(learning_rate=0.1),
                            place=fluid.CPUPlace())
    events = []

    def handler(event):
        events.append(type(event).__name__)
        if isinstance(event, fluid.BeginStepEvent) and event.step == 1:
            event.fetch_metrics = False
        if isinstance(event, fluid.EndStepEvent):
            assert (event.metrics == []) == (event.step == 1)
    reader = rill.batch(line_samples(64, 1), 16)
    trainer.train(num_epochs=20, event_handler=handler, reader=reader, feed_order=["x", "y"])
    assert events[:4] == ["BeginEpochEvent", "BeginStepEvent", "EndStepEvent", "BeginStepEvent"]
    assert events.count("EndEpochEvent") == 20 and events.count("EndStepEvent") == 80
    loss, = trainer.test(reader=rill.batch(line_samples(32, 2), 16), feed_order=["x", "y"])
    assert loss < 1e-3
    trainer.save_params(str(tmp_path / "params"))
    inferencer = fluid.Inferencer(infer_func=predict_net, param_path=str(tmp_path / "params"), place=fluid.CPUPlace())
    xs = np.random.RandomState(3).randn(5, 3).astype("float32")
    got, = inferencer.infer({"x": xs})
    np.testing.assert_allclose(got, xs @ W, atol=2e-2)


def test_a_trainer_stopped_midway_resumes_from_its_checkpoint(tmp_path):
    config = fluid.CheckpointConfig(checkpoint_dir=str(tmp_path), max_num_checkpoints=2, step_interval=2)
    reader = rill.batch(line_samples(64, 1), 16)  # 4 steps an epoch
    seen = []

    def stop_at_step_2_of_epoch_1(event):
        if isinstance(event, fluid.EndStepEvent):
            seen.append((event.epoch, event.step))
            if (event.epoch, event.step) == (1, 1):
                first.stop()
    first = fluid.Trainer(train_func=line_net, optimizer_func=lambda: fluid.optimizer.SGD(learning_rate=0.1),
                          checkpoint_config=config)
    first.train(num_epochs=3, event_handler=stop_at_step_2_of_epoch_1, reader=reader, feed_order=["x", "y"])
    assert seen[-1] == (1, 1)
    kept = sorted(os.listdir(str(tmp_path)))
    assert len(kept) == 2, kept  # the newest max_num_checkpoints
    with fluid.scope_guard(first.scope):
        w_at_stop = np.array(fluid.global_scope().find_var("w").get_tensor())
    seen.clear()
    second = fluid.Trainer(train_func=line_net, optimizer_func=lambda: fluid.optimizer.SGD(learning_rate=0.1),
                           checkpoint_config=config)
    with fluid.scope_guard(second.scope):
        np.testing.assert_array_equal(np.array(fluid.global_scope().find_var("w").get_tensor()), w_at_stop)
    second.train(num_epochs=3, event_handler=lambda e: isinstance(e, fluid.EndStepEvent) and
                 seen.append((e.epoch, e.step)), reader=reader, feed_order=["x", "y"])
    assert seen[0] == (1, 2) and seen[-1] == (2, 3)  # from the step after the checkpoint
    assert os.listdir(str(tmp_path)) == []  # a training that ended removes its checkpoints


def test_inference_transpiler_folds_batch_norm_into_the_conv(exe):
    img = layers.data(name="img", shape=[2, 6, 6], dtype="float32")
    conv = layers.conv2d(img, num_filters=4, filter_size=3, bias_attr=False)
    bn = layers.batch_norm(conv, act="relu", is_test=True)
    conv2 = layers.conv2d(bn, num_filters=3, filter_size=3)  # with its own bias (an elementwise_add)
    out = layers.batch_norm(conv2, is_test=True)
    exe.run(fluid.default_startup_program())
    scope = fluid.global_scope()
    rng = np.random.RandomState(0)
    for op in fluid.default_main_program().global_block().ops:
        if op.type == "batch_norm":  # statistics and affine terms of a trained net
            for slot, lo, hi in (("Mean", -1, 1), ("Variance", 0.5, 2), ("Scale", 0.5, 2), ("Bias", -1, 1)):
                t = scope.find_var(op.input(slot)[0]).get_tensor()
                t.set(rng.uniform(lo, hi, np.array(t).shape).astype("float32"), fluid.CPUPlace())
    program = fluid.default_main_program().clone(for_test=True)
    folded = program.clone()
    fluid.InferenceTranspiler().transpile(folded, fluid.CPUPlace())
    assert [op.type for op in folded.global_block().ops].count("batch_norm") == 0
    xs = rng.randn(2, 2, 6, 6).astype("float32")
    want, = exe.run(program, feed={"img": xs}, fetch_list=[out])
    got, = exe.run(folded, feed={"img": xs}, fetch_list=[out])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    again, = exe.run(program, feed={"img": xs}, fetch_list=[out])  # the original's parameters are untouched
    np.testing.assert_array_equal(again, want)


def test_img_conv_group_is_a_vgg_block():
    img = layers.data(name="img", shape=[3, 8, 8], dtype="float32")
    out = fluid.nets.img_conv_group(input=img, conv_num_filter=[4, 5], pool_size=2, pool_stride=2, conv_act="relu",
                                    conv_with_batchnorm=[True, False], conv_batchnorm_drop_rate=[0.5, 0.0])
    types = [op.type for op in fluid.default_main_program().global_block().ops]
    assert [t for t in types if t in ("conv2d", "batch_norm", "dropout", "relu", "pool2d")] == \
        ["conv2d", "batch_norm", "relu", "dropout", "conv2d", "relu", "pool2d"]
    assert out.shape == (-1, 5, 4, 4)
    with pytest.raises(ValueError, match="conv_padding has 3 entries for 2 convolutions"):
        fluid.nets.img_conv_group(input=img, conv_num_filter=[4, 5], pool_size=2, conv_padding=[1, 1, 1])
