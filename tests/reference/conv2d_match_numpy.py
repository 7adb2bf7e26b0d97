"""conv2d, depthwise_conv2d and conv2d_transpose against a numpy evaluation (tap by tap,
einsum and scatter): strides,
2- and 4-value paddings, SAME and VALID, dilations, groups, depthwise, output_padding and
output_size, NCHW and NHWC; fp32 and fp64.

usage: /usr/bin/python3 conv2d_match_numpy.py RILL WORK_DIR      (needs numpy)
"""
import math
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import op_reference  # noqa: E402

rill, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)


def conv(x, w, s=(1, 1), pad=(0, 0, 0, 0), d=(1, 1), groups=1, nhwc=False, same=False):
    if nhwc:
        return conv(x.transpose(0, 3, 1, 2), w, s, pad, d, groups, False, same).transpose(0, 2, 3, 1)
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    if same:
        pad = []
        for size, k, st, dil in ((h, kh, s[0], d[0]), (wd, kw, s[1], d[1])):
            total = max((math.ceil(size / st) - 1) * st + dil * (k - 1) + 1 - size, 0)
            pad += [total // 2, total - total // 2]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0], pad[1]), (pad[2], pad[3])))
    oh = (xp.shape[2] - (d[0] * (kh - 1) + 1)) // s[0] + 1
    ow = (xp.shape[3] - (d[1] * (kw - 1) + 1)) // s[1] + 1
    out = np.zeros((n, m, oh, ow))
    mg = m // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg, i * d[0]:i * d[0] + s[0] * (oh - 1) + 1:s[0],
                           j * d[1]:j * d[1] + s[1] * (ow - 1) + 1:s[1]]
                out[:, g * mg:(g + 1) * mg] += np.einsum("ncyx,mc->nmyx", patch, w[g * mg:(g + 1) * mg, :, i, j])
    return out


def conv_transpose(x, w, s=(1, 1), pad=(0, 0, 0, 0), d=(1, 1), groups=1, extra=(0, 0), nhwc=False):
    if nhwc:
        return conv_transpose(x.transpose(0, 3, 1, 2), w, s, pad, d, groups, extra).transpose(0, 2, 3, 1)
    n, c, h, wd = x.shape
    _, mg, kh, kw = w.shape
    cg = c // groups
    oh = (h - 1) * s[0] - pad[0] - pad[1] + d[0] * (kh - 1) + 1 + extra[0]
    ow = (wd - 1) * s[1] - pad[2] - pad[3] + d[1] * (kw - 1) + 1 + extra[1]
    full = np.zeros((n, mg * groups, oh + pad[0] + pad[1] + s[0] + d[0] * kh, ow + pad[2] + pad[3] + s[1] + d[1] * kw))
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                contrib = np.einsum("ncyx,co->noyx", x[:, g * cg:(g + 1) * cg].astype(np.float64), w[g * cg:(g + 1) * cg, :, i, j])
                full[:, g * mg:(g + 1) * mg, i * d[0]:i * d[0] + s[0] * (h - 1) + 1:s[0],
                     j * d[1]:j * d[1] + s[1] * (wd - 1) + 1:s[1]] += contrib
    return full[:, :, pad[0]:pad[0] + oh, pad[2]:pad[2] + ow]


rng = np.random.default_rng(23)
failed = False
for dtype, tol in ((np.float32, 1e-5), (np.float64, 1e-12)):
    tag = np.dtype(dtype).name
    x = rng.standard_normal((2, 4, 9, 8)).astype(dtype)
    xt = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    inputs = {"x": x, "xt": xt, "w": rng.standard_normal((6, 4, 3, 3)).astype(dtype),
              "wg": rng.standard_normal((6, 2, 3, 2)).astype(dtype), "wd": rng.standard_normal((4, 1, 3, 3)).astype(dtype),
              "w1": rng.standard_normal((5, 4, 1, 1)).astype(dtype), "wt": rng.standard_normal((4, 3, 3, 2)).astype(dtype),
              "wtg": rng.standard_normal((4, 2, 2, 3)).astype(dtype)}
    cases = [
        ("conv2d", "", {"Input": "x", "Filter": "w"}, conv(x, inputs["w"])),
        ("conv2d", op_reference.attrs(strides=[2, 2], paddings=[1, 1]), {"Input": "x", "Filter": "w"}, conv(x, inputs["w"], (2, 2), (1, 1, 1, 1))),
        ("conv2d", op_reference.attrs(paddings=[0, 2, 1, 0], dilations=[2, 1]), {"Input": "x", "Filter": "w"},
         conv(x, inputs["w"], pad=(0, 2, 1, 0), d=(2, 1))),
        ("conv2d", op_reference.attrs(groups=2, strides=[1, 2]), {"Input": "x", "Filter": "wg"}, conv(x, inputs["wg"], (1, 2), groups=2)),
        ("conv2d", op_reference.attrs(padding_algorithm="SAME", strides=[2, 3]), {"Input": "x", "Filter": "w"},
         conv(x, inputs["w"], (2, 3), same=True)),
        ("conv2d", op_reference.attrs(padding_algorithm="VALID", paddings=[4, 4]), {"Input": "x", "Filter": "w"}, conv(x, inputs["w"])),
        ("conv2d", "", {"Input": "x", "Filter": "w1"}, conv(x, inputs["w1"])),
        ("depthwise_conv2d", op_reference.attrs(groups=4, paddings=[1, 1]), {"Input": "x", "Filter": "wd"},
         conv(x, inputs["wd"], pad=(1, 1, 1, 1), groups=4)),
        ("conv2d", op_reference.attrs(data_format="NHWC", strides=[2, 1], paddings=[1, 0]), {"Input": "xt", "Filter": "w"},
         conv(xt, inputs["w"], (2, 1), (1, 1, 0, 0), nhwc=True)),
        ("conv2d_transpose", "", {"Input": "x", "Filter": "wt"}, conv_transpose(x, inputs["wt"])),
        ("conv2d_transpose", op_reference.attrs(strides=[2, 2], paddings=[1, 1]), {"Input": "x", "Filter": "wt"},
         conv_transpose(x, inputs["wt"], (2, 2), (1, 1, 1, 1))),
        ("conv2d_transpose", op_reference.attrs(strides=[2, 3], paddings=[1, 0, 0, 1], output_padding=[1, 2]), {"Input": "x", "Filter": "wt"},
         conv_transpose(x, inputs["wt"], (2, 3), (1, 0, 0, 1), extra=(1, 2))),
        ("conv2d_transpose", op_reference.attrs(strides=[2, 2], output_size=[20, 18], dilations=[1, 2]), {"Input": "x", "Filter": "wt"},
         conv_transpose(x, inputs["wt"], (2, 2), d=(1, 2), extra=(1, 1))),
        ("conv2d_transpose", op_reference.attrs(groups=2, strides=[1, 2]), {"Input": "x", "Filter": "wtg"},
         conv_transpose(x, inputs["wtg"], (1, 2), groups=2)),
        ("conv2d_transpose", op_reference.attrs(data_format="NHWC", strides=[2, 1]), {"Input": "xt", "Filter": "wt"},
         conv_transpose(xt, inputs["wt"], (2, 1), nhwc=True)),
    ]
    outs = op_reference.run_cases(rill, work, tag, inputs, [(op, a, slots, ["Output"]) for op, a, slots, _ in cases])
    if outs is None:
        failed = True
        continue
    for got, (op, a, slots, want) in zip(outs, cases):
        failed |= not op_reference.matches("%s %s %s %s" % (tag, op, a, slots), got[0], want.astype(dtype), tol)
sys.exit(1 if failed else 0)
