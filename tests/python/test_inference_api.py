"""rill.inference, Paddle Inference's Python API: a model saved by rill.fluid in Paddle
2.x's file layout (PREFIX.pdmodel + PREFIX.pdiparams) and in Fluid's (a directory) runs
through Config / create_predictor / handles as Paddle's examples drive it, and gives what the
Executor gives; misuse is an error that says what to do. The published MNIST model of
../shared/models runs too, where that directory is present."""
import os

import numpy as np
import pytest

import rill
import rill.fluid as fluid
from rill.inference import Config, create_predictor


def _saved_model(tmp_path, exe):
    """A two-layer net over x [-1, 4] saved twice; returns (its result for `x`, x, dirs)."""
    x = fluid.layers.data(name="x", shape=[4], dtype="float32")
    h = fluid.layers.fc(input=x, size=5, act="relu")
    y = fluid.layers.fc(input=h, size=3, act="softmax")
    exe.run(fluid.default_startup_program())
    value = np.random.default_rng(3).standard_normal((6, 4)).astype("float32")
    want, = exe.run(fluid.default_main_program(), feed={"x": value}, fetch_list=[y])
    combined = str(tmp_path / "combined")
    fluid.io.save_inference_model(combined, ["x"], [y], exe, model_filename="inference.pdmodel",
                                  params_filename="inference.pdiparams")
    separate = str(tmp_path / "separate")
    fluid.io.save_inference_model(separate, ["x"], [y], exe)
    return want, value, combined, separate


def _predict(config, value):
    predictor = create_predictor(config)
    names = predictor.get_input_names()
    assert names == ["x"]
    handle = predictor.get_input_handle(names[0])
    handle.reshape(value.shape)
    handle.copy_from_cpu(value)
    assert predictor.run() is True
    out = predictor.get_output_handle(predictor.get_output_names()[0])
    result = out.copy_to_cpu()
    assert out.shape() == list(result.shape)
    return result


def test_the_predictor_gives_what_the_executor_gives(tmp_path, exe):
    want, value, combined, separate = _saved_model(tmp_path, exe)
    for config in (Config(os.path.join(combined, "inference.pdmodel"), os.path.join(combined, "inference.pdiparams")),
                   Config(combined), Config(separate)):
        np.testing.assert_allclose(_predict(config, value), want, rtol=1e-6)
    # A flat buffer shaped by the handle's reshape, as Paddle's C++ examples feed one.
    predictor = create_predictor(Config(separate))
    handle = predictor.get_input_handle("x")
    handle.reshape([6, 4])
    handle.copy_from_cpu(value.reshape(-1))
    predictor.run()
    np.testing.assert_allclose(predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu(), want,
                               rtol=1e-6)


def test_misuse_says_what_to_do(tmp_path, exe):
    _, value, combined, _ = _saved_model(tmp_path, exe)
    predictor = create_predictor(Config(combined))
    with pytest.raises(RuntimeError, match=r"input\(s\) x not set"):
        predictor.run()
    with pytest.raises(ValueError, match="'y' is not an input of the model"):
        predictor.get_input_handle("y")
    out = predictor.get_output_handle(predictor.get_output_names()[0])
    with pytest.raises(RuntimeError, match="call run first"):
        out.copy_to_cpu()
    handle = predictor.get_input_handle("x")
    handle.reshape([5, 4])
    with pytest.raises(ValueError, match=r"reshaped to \[5, 4\], given 24 values"):
        handle.copy_from_cpu(value)
    config = Config()
    config.set_prog_file(os.path.join(combined, "inference.pdmodel"))
    with pytest.raises(ValueError, match="needs its parameter file"):
        create_predictor(config)
    with pytest.raises(rill.Error, match="is not an inference model"):
        create_predictor(Config(str(tmp_path)))


SHARED = os.environ.get("RILL_SHARED_MODELS",
                        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "models"))


@pytest.mark.skipif(not os.path.isdir(os.path.join(SHARED, "hand_writing")),
                    reason="no ../shared/models/hand_writing (set RILL_SHARED_MODELS)")
def test_the_published_mnist_model_predicts_its_digit():
    digit = np.load(os.path.join(SHARED, "hand_writing", "inputs", "infer_3.npy"))
    config = Config(os.path.join(SHARED, "hand_writing", "combined", "inference.pdmodel"),
                    os.path.join(SHARED, "hand_writing", "combined", "inference.pdiparams"))
    predictor = create_predictor(config)
    handle = predictor.get_input_handle(predictor.get_input_names()[0])
    handle.copy_from_cpu(digit)
    predictor.run()
    probabilities = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
    assert probabilities.shape == (1, 10) and int(probabilities.argmax()) == 3
