"""reshape2, flatten2, flatten_contiguous_range, squeeze2, unsqueeze2 and transpose2
against numpy's reshape, squeeze, expand_dims and transpose, an independent
reference, on fp32, int64 and bool inputs: the elements must come out bit-exactly.

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


A = op_reference.attrs

# (op, attrs, numpy reference) on x of shape (2, 1, 3, 5)
CASES = [
    ("reshape2", A(shape=[6, 5]), lambda x: x.reshape(6, 5)),
    ("reshape2", A(shape=[0, -1, 5]), lambda x: x.reshape(2, 3, 5)),
    ("reshape2", A(shape=[-1]), lambda x: x.reshape(-1)),
    ("flatten2", A(axis=2), lambda x: x.reshape(2, 15)),
    ("flatten2", A(axis=0), lambda x: x.reshape(1, 30)),
    ("flatten_contiguous_range", A(start_axis=1, stop_axis=-1), lambda x: x.reshape(2, 15)),
    ("flatten_contiguous_range", A(start_axis=0, stop_axis=1), lambda x: x.reshape(2, 3, 5)),
    ("squeeze2", "", lambda x: np.squeeze(x)),
    ("squeeze2", A(axes=[1]), lambda x: np.squeeze(x, 1)),
    ("squeeze2", A(axes=[2]), lambda x: x),  # a dim of 3 stays, as in Fluid
    ("unsqueeze2", A(axes=[0, 5]), lambda x: np.expand_dims(np.expand_dims(x, 0), 5)),
    ("unsqueeze2", A(axes=[-1]), lambda x: np.expand_dims(x, -1)),
    ("transpose2", A(axis=[3, 0, 2, 1]), lambda x: np.transpose(x, (3, 0, 2, 1))),
    ("transpose2", A(axis=[0, 1, 2, 3]), lambda x: x),
    ("transpose2", A(axis=[-1, -2, -3, -4]), lambda x: np.transpose(x, (3, 2, 1, 0))),
]

rng = np.random.default_rng(2)
failed = False
for dtype in (np.float32, np.int64, np.bool_):
    x = (rng.standard_normal((2, 1, 3, 5)) * 100).astype(dtype)
    tag = np.dtype(dtype).name
    outs = op_reference.run_cases(rill, work, tag, {"x": x}, [(op, attrs, "x") for op, attrs, _ in CASES])
    if outs is None:
        failed = True
        continue
    for got, (op, attrs, reference) in zip(outs, CASES):
        failed |= not op_reference.matches("%s %s %s" % (tag, op, attrs), got, reference(x))
sys.exit(1 if failed else 0)
