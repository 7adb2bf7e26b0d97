#!/usr/bin/env python3
"""Writes an inference model of about SIZE_MB megabytes in Paddle's layouts, for
bench/param_load_bench.cc: PARAMS fp32 parameters of equal size behind a chain of
elementwise_add ops, as DIR/__model__ with one file per parameter and as
DIR_combined/__model__ with __params__.

usage: bench/paddle_model.py DIR [SIZE_MB] [PARAMS]     (standard library only)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "paddle_format"))
import paddle_writer as pw  # noqa: E402

out = sys.argv[1]
size_mb = float(sys.argv[2]) if len(sys.argv) > 2 else 100
count = int(sys.argv[3]) if len(sys.argv) > 3 else 50
n = int(size_mb * 1e6 / 4 / count)
names = ["layer_%03d.w_0" % i for i in range(count)]
vars_ = [pw.var_desc("feed", pw.FEED_MINIBATCH, persistable=True), pw.var_desc("fetch", pw.FETCH_LIST, persistable=True),
         pw.var_desc("x", pw.LOD_TENSOR, pw.FP32, [n], need_check_feed=True)]
vars_ += [pw.var_desc(name, pw.LOD_TENSOR, pw.FP32, [n], persistable=True, is_parameter=True) for name in names]
ops = [pw.op_desc("feed", [("X", ["feed"])], [("Out", ["x"])], [pw.attr("col", pw.A_INT, 0)])]
prev = "x"
for i, name in enumerate(names):
    ops.append(pw.op_desc("elementwise_add", [("X", [prev]), ("Y", [name])], [("Out", ["h%d" % i])],
                          [pw.attr("axis", pw.A_INT, -1)] + pw.bookkeeping_attrs()))
    prev = "h%d" % i
ops.append(pw.op_desc("fetch", [("X", [prev])], [("Out", ["fetch"])], [pw.attr("col", pw.A_INT, 0)]))
model = pw.program_desc([pw.block_desc(0, -1, vars_, ops)])
records = {name: pw.lod_tensor_record(pw.FP32, [n], bytes([i % 251]) * (4 * n)) for i, name in enumerate(names)}
combined = out.rstrip("/") + "_combined"
for d in (out, combined):
    os.makedirs(d, exist_ok=True)
for d in (out, combined):
    with open(os.path.join(d, "__model__"), "wb") as f:
        f.write(model)
for name in names:
    with open(os.path.join(out, name), "wb") as f:
        f.write(records[name])
with open(os.path.join(combined, "__params__"), "wb") as f:
    for name in sorted(names):
        f.write(records[name])
print("%s: %d parameters of %d fp32 values (%.1f MB)" % (out, count, n, count * n * 4 / 1e6))
