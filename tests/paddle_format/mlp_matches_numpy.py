"""An MLP inference model in Paddle 2.x's exact layout runs
under `rill run` and matches numpy's computation of the same network to 1e-5.

The model is written byte by byte as Paddle's save_inference_model writes it (feed, mul,
elementwise_add, relu, mul, elementwise_add, softmax, scale with the empty ScaleTensor
slot, fetch; Paddle 2.x's bookkeeping attributes on every op, op_version_map, VarDesc's
need_check_feed/is_parameter/stop_gradient), in both directory layouts: __model__ with a
file per parameter, and PREFIX.pdmodel with PREFIX.pdiparams.

usage: /usr/bin/python3 mlp_matches_numpy.py RILL WORK_DIR      (needs numpy)
"""
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddle_writer as pw  # noqa: E402

rill, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)

BATCH, IN, HIDDEN, OUT = 16, 64, 32, 10
rng = np.random.default_rng(44)
params = {
    "fc_0.w_0": rng.standard_normal((IN, HIDDEN)).astype(np.float32) * 0.3,
    "fc_0.b_0": rng.standard_normal(HIDDEN).astype(np.float32) * 0.1,
    "fc_1.w_0": rng.standard_normal((HIDDEN, OUT)).astype(np.float32) * 0.3,
    "fc_1.b_0": rng.standard_normal(OUT).astype(np.float32) * 0.1,
}
image = rng.standard_normal((BATCH, IN)).astype(np.float32)
fetched = "save_infer_model/scale_0.tmp_0"


def ops():
    bk = pw.bookkeeping_attrs
    A = pw.attr

    def fc(i, x):
        w, b = "fc_%d.w_0" % i, "fc_%d.b_0" % i
        t0, t1 = "fc_%d.tmp_0" % i, "fc_%d.tmp_1" % i
        mul = pw.op_desc("mul", [("X", [x]), ("Y", [w])], [("Out", [t0])], [
            A("x_num_col_dims", pw.A_INT, 1), A("y_num_col_dims", pw.A_INT, 1),
            A("force_fp32_output", pw.A_BOOLEAN, False), A("scale_x", pw.A_FLOAT, 1.0),
            A("scale_y", pw.A_FLOATS, [1.0]), A("scale_out", pw.A_FLOAT, 1.0),
            A("use_mkldnn", pw.A_BOOLEAN, False)] + bk())
        add = pw.op_desc("elementwise_add", [("X", [t0]), ("Y", [b])], [("Out", [t1])], [
            A("axis", pw.A_INT, 1), A("use_mkldnn", pw.A_BOOLEAN, False),
            A("x_data_format", pw.A_STRING, ""), A("y_data_format", pw.A_STRING, ""),
            A("use_quantizer", pw.A_BOOLEAN, False), A("mkldnn_data_type", pw.A_STRING, "float32"),
            A("Scale_x", pw.A_FLOAT, 1.0), A("Scale_y", pw.A_FLOAT, 1.0),
            A("Scale_out", pw.A_FLOAT, 1.0)] + bk())
        return [mul, add], t1

    out = [pw.op_desc("feed", [("X", ["feed"])], [("Out", ["image"])], [A("col", pw.A_INT, 0)] + bk())]
    fc0, h = fc(0, "image")
    out += fc0
    out.append(pw.op_desc("relu", [("X", [h])], [("Out", ["fc_0.tmp_2"])],
                          [A("use_mkldnn", pw.A_BOOLEAN, False), A("use_cudnn", pw.A_BOOLEAN, False)] + bk()))
    fc1, logits = fc(1, "fc_0.tmp_2")
    out += fc1
    out.append(pw.op_desc("softmax", [("X", [logits])], [("Out", ["fc_1.tmp_2"])], [
        A("axis", pw.A_INT, -1), A("use_cudnn", pw.A_BOOLEAN, False), A("use_mkldnn", pw.A_BOOLEAN, False),
        A("data_format", pw.A_STRING, "AnyLayout"), A("is_test", pw.A_BOOLEAN, True),
        A("mkldnn_data_type", pw.A_STRING, "float32")] + bk()))
    out.append(pw.op_desc("scale", [("ScaleTensor", []), ("X", ["fc_1.tmp_2"])], [("Out", [fetched])], [
        A("scale", pw.A_FLOAT, 1.0), A("bias", pw.A_FLOAT, 0.0),
        A("bias_after_scale", pw.A_BOOLEAN, True)] + bk()))
    out.append(pw.op_desc("fetch", [("X", [fetched])], [("Out", ["fetch"])], [A("col", pw.A_INT, 0)] + bk()))
    return out


def program():
    v = pw.var_desc
    tmp = lambda name, dims: v(name, pw.LOD_TENSOR, pw.FP32, dims)  # noqa: E731
    vars_ = [v("feed", pw.FEED_MINIBATCH, persistable=True), v("fetch", pw.FETCH_LIST, persistable=True),
             v("image", pw.LOD_TENSOR, pw.FP32, [-1, IN], need_check_feed=True, stop_gradient=True)]
    for name, value in params.items():
        vars_.append(v(name, pw.LOD_TENSOR, pw.FP32, value.shape, persistable=True, is_parameter=True))
    vars_ += [tmp("fc_0.tmp_0", [-1, HIDDEN]), tmp("fc_0.tmp_1", [-1, HIDDEN]), tmp("fc_0.tmp_2", [-1, HIDDEN]),
              tmp("fc_1.tmp_0", [-1, OUT]), tmp("fc_1.tmp_1", [-1, OUT]), tmp("fc_1.tmp_2", [-1, OUT]),
              tmp(fetched, [-1, OUT])]
    block = pw.block_desc(0, -1, vars_, ops())
    return pw.program_desc([block], op_versions=[("softmax", 0), ("scale", 0), ("mul", 0)])


def record(name):
    value = params[name]
    return pw.lod_tensor_record(pw.FP32, value.shape, value.ravel().tobytes())


# The same network in numpy, in fp64.
def reference(x):
    p = {k: v.astype(np.float64) for k, v in params.items()}
    h = np.maximum(x.astype(np.float64) @ p["fc_0.w_0"] + p["fc_0.b_0"], 0)
    logits = h @ p["fc_1.w_0"] + p["fc_1.b_0"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return 1.0 * (e / e.sum(axis=1, keepdims=True)) + 0.0


model = program()
separate = os.path.join(work, "mlp")  # Paddle 1.x/2.x save_inference_model(dirname)
os.makedirs(separate)
with open(os.path.join(separate, "__model__"), "wb") as f:
    f.write(model)
for name in params:
    with open(os.path.join(separate, name), "wb") as f:
        f.write(record(name))
prefix = os.path.join(work, "mlp2", "inference")  # Paddle 2.x save_inference_model(path_prefix)
os.makedirs(os.path.dirname(prefix))
with open(prefix + ".pdmodel", "wb") as f:
    f.write(model)
with open(prefix + ".pdiparams", "wb") as f:
    f.write(b"".join(record(name) for name in sorted(params)))

x_path = os.path.join(work, "x.npy")
np.save(x_path, image)
want = reference(image)
failed = False
for model_path in (separate, prefix + ".pdmodel"):
    out_dir = os.path.join(work, "out_" + os.path.basename(model_path))
    r = subprocess.run([rill, "run", model_path, "--feed", "image=" + x_path, "--save", out_dir],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print("FAIL: rill run %s exited %d:\n%s" % (model_path, r.returncode, r.stderr))
        failed = True
        continue
    # Without --fetch, rill prints the program's fetch targets; the one target is the output.
    if not r.stdout.startswith(fetched + " fp32 [%d,%d]" % (BATCH, OUT)):
        print("FAIL: rill run %s printed %r" % (model_path, r.stdout[:200]))
        failed = True
    got = np.load(os.path.join(out_dir, fetched.replace("/", "_") + ".npy"))
    err = float(np.abs(got.astype(np.float64) - want).max())
    if got.shape != want.shape or got.dtype != np.float32 or not err <= 1e-5:
        print("FAIL: %s: shape %s dtype %s, max |rill - numpy| = %g" % (model_path, got.shape, got.dtype, err))
        failed = True
    else:
        print("ok: %s matches numpy (max |rill - numpy| = %.2g)" % (model_path, err))
sys.exit(1 if failed else 0)
