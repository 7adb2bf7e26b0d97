"""matmul_v2 and fc against numpy's matmul, an independent reference: every
transpose combination, batches (equal and one side unbatched), vectors, fc with and
without Bias and relu, at in_num_col_dims 1 and 2; fp32 and fp64.

usage: /usr/bin/python3 matmul_ops_match_numpy.py RILL WORK_DIR      (needs numpy)
"""
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import op_reference  # noqa: E402

rill, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)


rng = np.random.default_rng(3)
failed = False
for dtype, tol in ((np.float32, 1e-5), (np.float64, 1e-12)):
    def r(*shape):
        return rng.standard_normal(shape).astype(dtype)
    inputs = {"a": r(5, 7), "b": r(7, 3), "at": r(7, 5), "bt": r(3, 7), "ba": r(4, 5, 7), "bb": r(4, 7, 3),
              "v": r(7), "img": r(2, 3, 4, 5), "w": r(20, 6), "w2": r(60, 6), "bias": r(6)}
    cases = []  # (op, attrs, slots, numpy reference)
    for tx in (False, True):
        for ty in (False, True):
            x, y = ("at" if tx else "a"), ("bt" if ty else "b")
            want = (inputs[x].T if tx else inputs[x]) @ (inputs[y].T if ty else inputs[y])
            cases.append(("matmul_v2", op_reference.attrs(trans_x=tx, trans_y=ty), {"X": x, "Y": y}, want))
    cases.append(("matmul_v2", "", {"X": "ba", "Y": "bb"}, inputs["ba"] @ inputs["bb"]))
    cases.append(("matmul_v2", "", {"X": "ba", "Y": "b"}, inputs["ba"] @ inputs["b"]))
    cases.append(("matmul_v2", "", {"X": "a", "Y": "v"}, inputs["a"] @ inputs["v"]))
    cases.append(("matmul_v2", "", {"X": "v", "Y": "b"}, inputs["v"] @ inputs["b"]))
    flat1 = inputs["img"].reshape(2, 60)
    flat2 = inputs["img"].reshape(6, 20)
    cases.append(("fc", "", {"Input": "img", "W": "w2"}, flat1 @ inputs["w2"]))
    cases.append(("fc", 'attrs { name: "activation_type" type: STRING s: "relu" }', {"Input": "img", "W": "w2", "Bias": "bias"},
                  np.maximum(flat1 @ inputs["w2"] + inputs["bias"], 0)))
    cases.append(("fc", 'attrs { name: "in_num_col_dims" type: INT i: 2 }', {"Input": "img", "W": "w", "Bias": "bias"},
                  (flat2 @ inputs["w"] + inputs["bias"]).reshape(2, 3, 6)))
    tag = np.dtype(dtype).name
    outs = op_reference.run_cases(rill, work, tag, inputs, [(op, attrs, slots) for op, attrs, slots, _ in cases])
    if outs is None:
        failed = True
        continue
    for got, (op, attrs, slots, want) in zip(outs, cases):
        label = "%s %s %s %s" % (tag, op, attrs, slots)
        failed |= not op_reference.matches(label, got, np.asarray(want, dtype=dtype), tol)
sys.exit(1 if failed else 0)
