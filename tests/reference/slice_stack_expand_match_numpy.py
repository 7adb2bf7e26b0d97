"""slice, stack and expand against numpy's indexing, stack and tile, an
independent reference: negative and clamped bounds, decrease_axis, bounds given as a
tensor, every stack axis, tiles on every dim; fp32 and int64, compared bit-exactly.

usage: /usr/bin/python3 slice_stack_expand_match_numpy.py RILL WORK_DIR      (needs numpy)
"""
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import op_reference  # noqa: E402

rill, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)


def slice_attrs(axes, starts, ends, decrease=()):
    return op_reference.attrs(axes=axes, starts=starts, ends=ends, **({"decrease_axis": decrease} if decrease else {}))


rng = np.random.default_rng(17)
failed = False
for dtype in (np.float32, np.int64):
    tag = np.dtype(dtype).name
    x = (rng.standard_normal((4, 5, 6)) * 100).astype(dtype)
    inputs = {"x": x, "y": (x + 1).astype(dtype), "z": (x * 2).astype(dtype), "starts": np.array([1, -4], np.int64)}
    cases = [
        ("slice", slice_attrs([1], [1], [4]), {"Input": "x"}, x[:, 1:4]),
        ("slice", slice_attrs([0, 2], [-3, 2], [100, -1]), {"Input": "x"}, x[-3:, :, 2:-1]),
        ("slice", slice_attrs([2], [5], [2]), {"Input": "x"}, x[:, :, 5:2]),
        ("slice", slice_attrs([0, 1], [2, 3], [3, 4], [0]), {"Input": "x"}, x[2, 3:4]),
        ("slice", op_reference.attrs(axes=[1, 2], ends=[5, 6]), {"Input": "x", "StartsTensor": "starts"}, x[:, 1:5, -4:6]),
        ("stack", "", {"X": ["x", "y", "z"]}, np.stack([x, inputs["y"], inputs["z"]], 0)),
        ("stack", op_reference.attrs(axis=2), {"X": ["x", "y"]}, np.stack([x, inputs["y"]], 2)),
        ("stack", op_reference.attrs(axis=-1), {"X": ["z", "x"]}, np.stack([inputs["z"], x], -1)),
        ("expand", op_reference.attrs(expand_times=[2, 1, 3]), "x", np.tile(x, (2, 1, 3))),
    ]
    outs = op_reference.run_cases(rill, work, tag, inputs,
                                    [(op, attrs, slots, ["Y"] if op == "stack" else ["Out"]) for op, attrs, slots, _ in cases])
    if outs is None:
        failed = True
        continue
    for got, (op, attrs, slots, want) in zip(outs, cases):
        failed |= not op_reference.matches("%s %s %s %s" % (tag, op, attrs, slots), got[0], want)
sys.exit(1 if failed else 0)
