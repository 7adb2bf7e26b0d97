#!/usr/bin/env bash
# `cmake --install` puts the rill package under PREFIX/<RILL_PYTHON_INSTALL_DIR> and the
# plugins under PREFIX/lib/rill/plugins; the installed package finds them and runs a
# program, with the build tree out of the way.
#   usage: installed_package_runs.sh BUILD_DIR OUT_DIR PYTHON
set -euo pipefail
build=$1 out=$2 python=$3
rm -rf "$out"
cmake --install "$build" --prefix "$out/prefix" >/dev/null
site=$(find "$out/prefix" -type d -name site-packages | head -1)
cd "$out"
env -u RILL_PLUGIN_PATH PYTHONPATH="$site" "$python" - "$out/prefix" <<'PY'
import os, sys
import numpy as np
import rill, rill.fluid as fluid
prefix = sys.argv[1]
assert rill.__file__.startswith(prefix), rill.__file__
paths = [p["path"] for p in rill.plugins() if p["path"] != "(built in)"]
assert paths and all(p.startswith(prefix + "/lib/rill/plugins/") for p in paths), paths
x = fluid.layers.data(name="x", shape=[2], dtype="float32")
y = fluid.layers.fc(input=x, size=1, param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(1.0)),
                    bias_attr=False)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
out, = exe.run(feed={"x": np.array([[1, 2]], "float32")}, fetch_list=[y])
assert out.tolist() == [[3.0]], out
print("PASS: the installed package runs with the installed plugins (%d)" % len(paths))
PY
