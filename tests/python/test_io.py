"""fluid.io against failure and hostile models: a failed save leaves the last good files; a
model that writes files or reaches outside its directory is refused unless allowed; files
a model's program does not name are not read."""
import os

import numpy as np
import pytest

import rill
import rill.fluid as fluid
from rill.fluid import layers


def small_model():
    x = layers.data(name="x", shape=[2], dtype="float32")
    y = layers.fc(input=x, size=1, act=None)
    return x, y


def test_a_failed_save_persistables_leaves_the_last_checkpoint(exe, tmp_path):
    small_model()
    exe.run(fluid.default_startup_program())
    fluid.io.save_persistables(exe, str(tmp_path), filename="ckpt")
    good = (tmp_path / "ckpt").read_bytes()
    assert len(good) > 0
    # A persistable variable the startup program never set: nothing may be written.
    fluid.default_main_program().global_block().create_var(name="never_set", shape=[3], dtype="float32",
                                                           persistable=True)
    with pytest.raises(ValueError, match="'never_set' holds no tensor"):
        fluid.io.save_persistables(exe, str(tmp_path), filename="ckpt")
    assert (tmp_path / "ckpt").read_bytes() == good
    with pytest.raises(ValueError, match="'never_set' holds no tensor"):
        fluid.io.save_persistables(exe, str(tmp_path / "separate"))
    assert not (tmp_path / "separate").exists()
    assert sorted(os.listdir(str(tmp_path))) == ["ckpt"]  # no temporary left behind


def test_a_save_inference_model_whose_write_fails_leaves_the_old_files(exe, tmp_path):
    """A write failing mid-way (a file-size limit, SIGXFSZ ignored: EFBIG) leaves the file it
    was writing as it was, and the program, written last, too."""
    import resource
    import signal
    x = layers.data(name="x", shape=[100], dtype="float32")
    y = layers.fc(input=x, size=100, act=None)
    exe.run(fluid.default_startup_program())
    d = str(tmp_path)
    fluid.io.save_inference_model(d, ["x"], [y], exe)
    before = {name: (tmp_path / name).read_bytes() for name in os.listdir(d)}
    assert (tmp_path / "fc_0.w_0").stat().st_size > 8192
    exe.run(fluid.default_startup_program())  # new values, so a written file would differ
    old_limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (8192, old_limit[1]))
    try:
        with pytest.raises(rill.Error, match="File too large|writing failed"):
            fluid.io.save_inference_model(d, ["x"], [y], exe)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old_limit)
        signal.signal(signal.SIGXFSZ, old_handler)
    assert (tmp_path / "fc_0.w_0").read_bytes() == before["fc_0.w_0"]
    assert (tmp_path / "__model__").read_bytes() == before["__model__"]
    assert sorted(os.listdir(d)) == sorted(before)  # no temporary left behind


def test_both_layouts_saved_into_one_directory_load(exe, tmp_path):
    """As Paddle's test_recognize_digits does: the combined and the separate layout saved
    into one directory in turn; each loads, ignoring the other's files."""
    x, y = small_model()
    exe.run(fluid.default_startup_program())
    feed = {"x": np.array([[1.0, 2.0]], "float32")}
    want, = exe.run(feed=feed, fetch_list=[y])
    d = str(tmp_path)
    fluid.io.save_inference_model(d, ["x"], [y], exe, params_filename="__params__")
    fluid.io.save_inference_model(d, ["x"], [y], exe)
    (tmp_path / "README").write_text("a note")
    (tmp_path / "sub").mkdir()
    for params in ("__params__", None):
        program, feeds, fetches = fluid.io.load_inference_model(d, exe, params_filename=params)
        got, = exe.run(program, feed=feed, fetch_list=fetches)
        np.testing.assert_allclose(got, want)


def test_models_that_write_files_or_reach_outside_are_refused(exe, tmp_path):
    x, y = small_model()
    exe.run(fluid.default_startup_program())
    d = tmp_path / "model"
    fluid.io.save_inference_model(str(d), ["x"], [y], exe)
    program, _, _ = fluid.io.load_inference_model(str(d), exe)
    victim = tmp_path / "victim"
    block = program.global_block()
    block.append_op(type="save", inputs={"X": [block.var("fc_0.w_0")]}, attrs={"file_path": str(victim)})
    (d / "__model__").write_bytes(program.serialize_to_string() if hasattr(program, "serialize_to_string")
                                  else program.desc.SerializeToString())
    with pytest.raises(rill.Error, match=r"\(save, file_path '.*victim'\) writes a file"):
        fluid.io.load_inference_model(str(d), exe)
    program, _, _ = fluid.io.load_inference_model(str(d), exe, allow_files_outside=True)
    assert any(op.type == "save" for op in program.global_block().ops)
    assert not victim.exists()


def test_get_parameter_value_reads_the_scope(exe):
    x = fluid.layers.data(name="x", shape=[3], dtype="float32")
    fluid.layers.fc(input=x, size=2, param_attr=fluid.ParamAttr(name="w", initializer=fluid.initializer.Constant(0.5)))
    exe.run(fluid.default_startup_program())
    np.testing.assert_array_equal(fluid.io.get_parameter_value_by_name("w", exe), np.full((3, 2), 0.5, "float32"))
    w = fluid.default_main_program().global_block().var("w")
    np.testing.assert_array_equal(fluid.io.get_parameter_value(w, exe), np.full((3, 2), 0.5, "float32"))
    with pytest.raises(TypeError, match="Parameter"):
        fluid.io.get_parameter_value(x, exe)
