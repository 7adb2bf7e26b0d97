"""yolo_box and multiclass_nms/2/3 against the numpy reference of tests/models/
paddle_reference.py (Paddle's definitions, written apart from the kernels): random heads
with boxes below the confidence threshold, clipped and not, iou_aware; NMS over [N, C, M]
scores with nms_top_k, keep_top_k and adaptive eta, in pixels and normalized; the [M, C]
layout split by RoisNum with an image that has no boxes; and what each version returns when
nothing is kept. fp32 and fp64.

usage: /usr/bin/python3 detection_match_numpy.py RILL WORK_DIR      (needs numpy and torch)
"""
import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import op_reference  # noqa: E402
import paddle_reference  # noqa: E402

rill, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
attrs = op_reference.attrs


def boxes(rng, shape, dt):
    """Random (x1, y1, x2, y2) boxes of `shape` + [4], many overlapping."""
    xy = rng.uniform(0, 40, shape + (2,))
    wh = rng.uniform(4, 30, shape + (2,))
    return np.concatenate([xy, xy + wh], -1).astype(dt)


rng = np.random.default_rng(61)
failed = False
for dt in (np.float32, np.float64):
    tag = np.dtype(dt).name
    head = rng.standard_normal((2, 3 * (5 + 4), 5, 6)).astype(dt)
    aware = rng.standard_normal((2, 2 * (6 + 3), 4, 3)).astype(dt)
    img = np.array([[40, 48], [33, 20]], np.int32)
    yolo_a = dict(anchors=[10, 13, 16, 30, 33, 23], class_num=4, conf_thresh=0.4, downsample_ratio=8, scale_x_y=1.05)
    yolo_b = dict(anchors=[5, 9, 12, 7], class_num=3, conf_thresh=0.2, downsample_ratio=16, clip_bbox=False,
                  iou_aware=True, iou_aware_factor=0.4)
    nms_boxes = boxes(rng, (2, 30), dt)
    nms_scores = rng.uniform(0, 1, (2, 4, 30)).astype(dt)
    nms_a = dict(background_label=0, score_threshold=0.3, nms_top_k=12, nms_threshold=0.3, nms_eta=0.8,
                 keep_top_k=10, normalized=False)
    nms_b = dict(background_label=-1, score_threshold=0.5, nms_top_k=-1, nms_threshold=0.5, keep_top_k=-1,
                 normalized=True)
    rows_boxes = boxes(rng, (7, 3), dt) / dt(80)
    rows_scores = rng.uniform(0, 1, (7, 3)).astype(dt)
    rois = np.array([3, 0, 4], np.int32)
    nms_c = dict(background_label=1, score_threshold=0.2, nms_top_k=-1, nms_threshold=0.4, keep_top_k=3)
    quiet = dict(background_label=0, score_threshold=2.0, nms_top_k=-1, nms_threshold=0.5, keep_top_k=-1)
    inputs = {"head": head, "aware": aware, "img": img, "bb": nms_boxes, "sc": nms_scores, "rb": rows_boxes,
              "rs": rows_scores, "rois": rois}
    det = ["Out", "Index", "NmsRoisNum"]
    cases = [
        ("yolo_box", attrs(**yolo_a), {"X": "head", "ImgSize": "img"}, ["Boxes", "Scores"],
         paddle_reference._yolo_box(head, img, yolo_a)),
        ("yolo_box", attrs(**yolo_b), {"X": "aware", "ImgSize": "img"}, ["Boxes", "Scores"],
         paddle_reference._yolo_box(aware, img, yolo_b)),
        ("multiclass_nms3", attrs(**nms_a), {"BBoxes": "bb", "Scores": "sc"}, det,
         paddle_reference._multiclass_nms(nms_boxes, nms_scores, nms_a)),
        ("multiclass_nms3", attrs(**nms_b), {"BBoxes": "bb", "Scores": "sc"}, det,
         paddle_reference._multiclass_nms(nms_boxes, nms_scores, nms_b)),
        ("multiclass_nms3", attrs(**nms_c), {"BBoxes": "rb", "Scores": "rs", "RoisNum": "rois"}, det,
         paddle_reference._multiclass_nms(rows_boxes, rows_scores, nms_c, rois)),
        ("multiclass_nms2", attrs(**quiet), {"BBoxes": "bb", "Scores": "sc"}, ["Out", "Index"],
         {"Out": np.zeros((0, 6), dt), "Index": np.zeros((0, 1), np.int32)}),
        ("multiclass_nms", attrs(**quiet), {"BBoxes": "bb", "Scores": "sc"}, ["Out"], {"Out": np.full((1, 1), -1, dt)}),
    ]
    outs = op_reference.run_cases(rill, work, tag, inputs, [c[:4] for c in cases])
    if outs is None:
        failed = True
        continue
    for got, (op, attr_text, _, names, want) in zip(outs, cases):
        for g, name in zip(got, names):
            tol = 1e-5 if dt == np.float32 and name != "Index" else 0 if name in ("Index", "NmsRoisNum") else 1e-12
            failed |= not op_reference.matches("%s %s %s %s" % (tag, op, attr_text[:60], name), g, want[name], tol)
    # Each kept row's Index names its box: the row's coordinates are that box's.
    out, index = outs[2][0], outs[2][1].reshape(-1)
    failed |= not op_reference.matches(tag + " Index names each row's box", out[:, 2:], nms_boxes.reshape(-1, 4)[index])
sys.exit(1 if failed else 0)
