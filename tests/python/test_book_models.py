"""recognize_digits (Paddle book chapter 2), the MLP and the conv net as the book writes
them (examples/python/recognize_digits.py), trained on synthetic digits to an accuracy,
saved with save_inference_model, loaded back, and served by `rill run DIR`."""
import importlib.util
import os
import subprocess

import numpy as np
import pytest

import rill.fluid as fluid
from conftest import rill_binary

# The nets and the data of examples/python/recognize_digits.py, which this suite trains.
_spec = importlib.util.spec_from_file_location(
    "recognize_digits", os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python",
                                     "recognize_digits.py"))
recognize_digits = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(recognize_digits)
synthetic_digits = recognize_digits.synthetic_digits


def serve(tmp_path, prediction, exe, test_program):
    """save_inference_model, load_inference_model and `rill run DIR` give the trained net's
    predictions."""
    model_dir = str(tmp_path / "model")
    fluid.io.save_inference_model(model_dir, ["img"], [prediction], exe)
    assert os.path.exists(os.path.join(model_dir, "__model__"))
    images, _ = synthetic_digits(8, seed=3)
    expected, = exe.run(test_program, feed={"img": images, "label": np.zeros((8, 1), "int64")},
                        fetch_list=[prediction])
    with fluid.scope_guard(fluid.core.Scope()):
        program, feed_names, fetch_targets = fluid.io.load_inference_model(model_dir, exe)
        assert feed_names == ["img"] and [t.name for t in fetch_targets] == [prediction.name]
        got, = exe.run(program, feed={"img": images}, fetch_list=fetch_targets)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    np.save(str(tmp_path / "img.npy"), images)
    out_dir = tmp_path / "out"
    subprocess.run([rill_binary(), "run", model_dir, "--feed", "img=%s" % (tmp_path / "img.npy"), "--save",
                    str(out_dir)], check=True, capture_output=True, timeout=120)
    served = np.load(str(out_dir / (prediction.name + ".npy")))
    np.testing.assert_allclose(served, expected, rtol=1e-5, atol=1e-6)


def test_recognize_digits_mlp(exe, tmp_path):
    prediction, test_program, accuracy = recognize_digits.train(recognize_digits.multilayer_perceptron, exe, 1024,
                                                                log=lambda line: None)
    assert accuracy >= 0.9
    serve(tmp_path, prediction, exe, test_program)


def test_recognize_digits_conv(exe, tmp_path):
    prediction, test_program, accuracy = recognize_digits.train(recognize_digits.convolutional_neural_network, exe,
                                                                1024, log=lambda line: None)
    assert accuracy >= 0.9
    ops = [op.type for op in fluid.default_main_program().global_block().ops]
    assert ops[:8] == ["conv2d", "elementwise_add", "relu", "pool2d", "batch_norm", "conv2d", "elementwise_add",
                       "relu"]
    serve(tmp_path, prediction, exe, test_program)


def test_save_and_load_params_in_both_layouts(exe, tmp_path):
    img = fluid.layers.data(name="img", shape=[4], dtype="float32")
    fluid.layers.fc(input=img, size=3)
    exe.run(fluid.default_startup_program())
    before = {n: fluid.fetch_var(n) for n in ("fc_0.w_0", "fc_0.b_0")}
    fluid.io.save_params(exe, str(tmp_path / "separate"))
    fluid.io.save_persistables(exe, str(tmp_path / "combined"), filename="params")
    assert sorted(os.listdir(tmp_path / "separate")) == ["fc_0.b_0", "fc_0.w_0"]
    assert os.listdir(tmp_path / "combined") == ["params"]
    for dirname, filename in (("separate", None), ("combined", "params")):
        with fluid.scope_guard(fluid.core.Scope()):
            fluid.io.load_params(exe, str(tmp_path / dirname), fluid.default_main_program(), filename=filename)
            for n, v in before.items():
                np.testing.assert_array_equal(fluid.fetch_var(n), v)
    with fluid.scope_guard(fluid.core.Scope()):
        fluid.io.load_persistables(exe, str(tmp_path / "combined"), filename="params")
        np.testing.assert_array_equal(fluid.fetch_var("fc_0.w_0"), before["fc_0.w_0"])
    with pytest.raises(Exception, match="fc_0"):
        with fluid.scope_guard(fluid.core.Scope()):
            fluid.io.load_params(exe, str(tmp_path / "nowhere"), fluid.default_main_program())


def test_prune_and_get_inference_program():
    x = fluid.layers.data(name="x", shape=[4], dtype="float32")
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    hidden = fluid.layers.dropout(fluid.layers.fc(input=x, size=8, act="relu"), dropout_prob=0.5)
    prediction = fluid.layers.fc(input=hidden, size=3, act="softmax")
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=prediction, label=label))
    fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    inference = fluid.io.get_inference_program(prediction)
    ops = [op.type for op in inference.global_block().ops]
    assert ops == ["mul", "elementwise_add", "relu", "dropout", "mul", "elementwise_add", "softmax"]
    assert inference.global_block().ops[3].attr("is_test") is True
    assert len(fluid.default_main_program().global_block().ops) > len(ops)  # the original is untouched
