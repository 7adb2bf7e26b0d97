"""The scripts in examples/python run as documented and reach what they check."""
import os
import subprocess
import sys

import pytest

import rill.fluid as fluid
from rill.fluid import layers

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python")


@pytest.mark.parametrize("script, args, expect", [
    ("go.py", [], "received 99 (status True)"),
    ("channels.py", [], "buffered: 7 True, 7 True; then closed: False; the sent var is still 7; unbuffered: 42 True"),
    ("select_fibonacci.py", [], "the tenth Fibonacci number received: 34"),
    ("fit_a_line.py", [], "saved the model to fit_a_line.model/"),
    ("recognize_digits.py", ["mlp"], "test accuracy"),
])
def test_example_runs(tmp_path, script, args, expect):
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, script)] + args, cwd=str(tmp_path),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert expect in result.stdout


def test_append_backward_returns_parameters_and_gradients():
    x = layers.data(name="x", shape=[3], dtype="float32")
    loss = layers.mean(layers.fc(input=x, size=2))
    pairs = fluid.append_backward(loss)
    assert sorted((p.name, g.name) for p, g in pairs) == [("fc_0.b_0", "fc_0.b_0@GRAD"),
                                                          ("fc_0.w_0", "fc_0.w_0@GRAD")]
    for p, g in pairs:
        assert isinstance(p, fluid.Parameter) and g.shape == p.shape and g.dtype == p.dtype
    types = [op.type for op in fluid.default_main_program().global_block().ops]
    assert "mul_grad" in types and "mean_grad" in types
    only_w = fluid.Program()
    with fluid.program_guard(only_w, fluid.Program()), fluid.unique_name.guard():
        x = layers.data(name="x", shape=[3], dtype="float32")
        loss = layers.mean(layers.fc(input=x, size=2))
        assert [p.name for p, _ in fluid.append_backward(loss, parameter_list=["fc_0.w_0"])] == ["fc_0.w_0"]
