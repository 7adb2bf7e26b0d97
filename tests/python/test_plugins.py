"""Plugins from Python: the shipped ones load on import, a third party's loads with
rill.load_plugin and its ops are usable through LayerHelper.append_op at once."""
import os

import numpy as np
import pytest

import rill
import rill.fluid as fluid
from rill.fluid.layer_helper import LayerHelper
from conftest import run_python

EXAMPLE = os.environ.get("RILL_EXAMPLE_PLUGIN", "")


def test_third_party_plugin_op_runs_from_python(exe):
    info = rill.load_plugin(EXAMPLE)
    assert info["name"] == "example_ops" and "example_softsign" in info["ops"]
    assert rill.load_plugin(EXAMPLE)["name"] == "example_ops"  # loading it again changes nothing
    x = fluid.layers.data(name="x", shape=[5], dtype="float32")
    helper = LayerHelper("example_softsign")
    out = helper.create_tmp_variable("float32")
    helper.append_op(type="example_softsign", inputs={"X": x}, outputs={"Out": out})
    xs = np.linspace(-3, 3, 10, dtype="float32").reshape(2, 5)
    got, = exe.run(feed={"x": xs}, fetch_list=[out])
    np.testing.assert_allclose(got, xs / (1 + np.abs(xs)), rtol=1e-6)
    hs = helper.create_tmp_variable("float32")
    helper.append_op(type="example_hard_shrink", inputs={"X": x}, outputs={"Out": hs}, attrs={"threshold": -1.0})
    with pytest.raises(rill.Error, match="example_hard_shrink"):  # the plugin's own error, naming the op
        exe.run(feed={"x": xs}, fetch_list=[hs])
    assert "example_ops" in [p["name"] for p in rill.plugins()]


def test_bad_plugin_paths_are_errors():
    with pytest.raises(rill.Error, match="does not exist") as e:
        rill.load_plugin("/no/such/plugin.so")
    assert isinstance(e.value, LookupError)
    with pytest.raises(rill.Error, match="not a shared library|ELF|invalid"):
        rill.load_plugin(__file__)


def test_rill_plugin_path_replaces_the_shipped_plugins():
    code = ("import rill\nprint(sorted(p['name'] for p in rill.plugins()))\n"
            "import rill.fluid as fluid\n"
            "h = fluid.layer_helper.LayerHelper('x')\n"
            "try:\n    h.append_op(type='relu')\nexcept rill.Error as e:\n    print('relu:', e)\n")
    result = run_python(code, env={"RILL_PLUGIN_PATH": os.path.dirname(EXAMPLE)})
    assert result.returncode == 0, result.stderr
    assert "['core', 'example_ops']" in result.stdout
    assert "relu:" in result.stdout
    bad = run_python("import rill", env={"RILL_PLUGIN_PATH": "::"})
    assert bad.returncode != 0 and "RILL_PLUGIN_PATH" in bad.stderr
