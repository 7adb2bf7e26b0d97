"""reshape2, flatten2, flatten_contiguous_range, squeeze2, unsqueeze2 and transpose2
against numpy's reshape, squeeze, expand_dims and transpose (issue 45's independent
reference), on fp32, int64 and bool inputs: the elements must come out bit-exactly.

usage: /usr/bin/python3 reshape_ops_match_numpy.py RILL WORK_DIR      (needs numpy)
"""
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import op_reference  # noqa: E402

rill, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)


def ints(name, values):
    return 'attrs { name: "%s" type: INTS %s }' % (name, " ".join("ints: %d" % v for v in values))


def int_attr(name, value):
    return 'attrs { name: "%s" type: INT i: %d }' % (name, value)


# (op, attrs, numpy reference) on x of shape (2, 1, 3, 5)
CASES = [
    ("reshape2", ints("shape", [6, 5]), lambda x: x.reshape(6, 5)),
    ("reshape2", ints("shape", [0, -1, 5]), lambda x: x.reshape(2, 3, 5)),
    ("reshape2", ints("shape", [-1]), lambda x: x.reshape(-1)),
    ("flatten2", int_attr("axis", 2), lambda x: x.reshape(2, 15)),
    ("flatten2", int_attr("axis", 0), lambda x: x.reshape(1, 30)),
    ("flatten_contiguous_range", int_attr("start_axis", 1) + " " + int_attr("stop_axis", -1), lambda x: x.reshape(2, 15)),
    ("flatten_contiguous_range", int_attr("start_axis", 0) + " " + int_attr("stop_axis", 1), lambda x: x.reshape(2, 3, 5)),
    ("squeeze2", "", lambda x: np.squeeze(x)),
    ("squeeze2", ints("axes", [1]), lambda x: np.squeeze(x, 1)),
    ("squeeze2", ints("axes", [2]), lambda x: x),  # a dim of 3 stays, as in Fluid
    ("unsqueeze2", ints("axes", [0, 5]), lambda x: np.expand_dims(np.expand_dims(x, 0), 5)),
    ("unsqueeze2", ints("axes", [-1]), lambda x: np.expand_dims(x, -1)),
    ("transpose2", ints("axis", [3, 0, 2, 1]), lambda x: np.transpose(x, (3, 0, 2, 1))),
    ("transpose2", ints("axis", [0, 1, 2, 3]), lambda x: x),
    ("transpose2", ints("axis", [-1, -2, -3, -4]), lambda x: np.transpose(x, (3, 2, 1, 0))),
]

rng = np.random.default_rng(2)
failed = False
for dtype in (np.float32, np.int64, np.bool_):
    x = (rng.standard_normal((2, 1, 3, 5)) * 100).astype(dtype)
    tag = np.dtype(dtype).name
    try:
        outs = op_reference.run_ops(rill, work, tag, {"x": x}, [(op, attrs, "x") for op, attrs, _ in CASES])
    except RuntimeError as e:
        print("FAIL: %s" % e)
        failed = True
        continue
    for got, (op, attrs, reference) in zip(outs, CASES):
        failed |= not op_reference.matches("%s %s %s" % (tag, op, attrs), got, reference(x))
sys.exit(1 if failed else 0)
