"""lookup_table and lookup_table_v2 against numpy's indexing, an independent
reference: int64 and int32 ids of several shapes, repeats, padding_idx; fp32 and fp64 tables, and the int8 and
int16 tables Paddle keeps for inference.

usage: /usr/bin/python3 lookup_table_match_numpy.py RILL WORK_DIR      (needs numpy)
"""
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import op_reference  # noqa: E402

rill, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)

rng = np.random.default_rng(5)
failed = False
for dtype in (np.float32, np.float64, np.int8, np.int16):
    w = (rng.standard_normal((11, 7)) * 100).astype(dtype)
    ids = rng.integers(0, 11, size=(3, 4)).astype(np.int64)
    inputs = {"w": w, "ids": ids, "ids32": ids.astype(np.int32), "ids_v1": ids.reshape(12, 1), "ids_1d": ids[0]}
    padded = w[ids].copy()
    padded[ids == ids[0, 0]] = 0
    cases = [
        ("lookup_table_v2", "", {"W": "w", "Ids": "ids"}, w[ids]),
        ("lookup_table_v2", "", {"W": "w", "Ids": "ids32"}, w[ids]),
        ("lookup_table_v2", "", {"W": "w", "Ids": "ids_1d"}, w[ids[0]]),
        ("lookup_table_v2", 'attrs { name: "padding_idx" type: LONG l: %d }' % ids[0, 0], {"W": "w", "Ids": "ids"}, padded),
        ("lookup_table", "", {"W": "w", "Ids": "ids_v1"}, w[ids.reshape(12)]),
    ]
    tag = np.dtype(dtype).name
    outs = op_reference.run_cases(rill, work, tag, inputs, [(op, attrs, slots) for op, attrs, slots, _ in cases])
    if outs is None:
        failed = True
        continue
    for got, (op, attrs, slots, want) in zip(outs, cases):
        failed |= not op_reference.matches("%s %s %s %s" % (tag, op, attrs, slots), got, want)
sys.exit(1 if failed else 0)
