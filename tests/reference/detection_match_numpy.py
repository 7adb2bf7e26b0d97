"""Paddle's detection ops against references written apart from Rill's kernels, fp32 and
fp64:
- yolo_box and multiclass_nms/2/3 against tests/models/paddle_reference.py: random heads
  with boxes below the confidence threshold, clipped and not, iou_aware; NMS over [N, C, M]
  scores with nms_top_k, keep_top_k and adaptive eta, in pixels and normalized; the [M, C]
  layout split by RoisNum with an image that has no boxes; and what each version returns
  when nothing is kept;
- prior_box, density_prior_box, box_coder, iou_similarity and matrix_nms against
  detection_reference.py: both prior orders with max sizes, steps given and derived,
  flatten_to_2d; encoding and decoding along both axes with PriorBoxVar, the variance
  attribute and neither, in pixels and normalized; linear and Gaussian decay with top-k
  limits and a post threshold;
- roi_align and its gradient against torchvision.ops.roi_align (forward and autograd),
  aligned and not, with a sampling ratio and without, regions reaching past the map.

usage: /usr/bin/python3 detection_match_numpy.py RILL WORK_DIR   (needs numpy, torch, torchvision)
"""
import os
import shutil
import sys

import numpy as np
import torch
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import op_reference  # noqa: E402
import paddle_reference  # noqa: E402
import detection_reference as ref  # noqa: E402

rill, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
attrs = op_reference.attrs


def boxes(rng, shape, dt):
    """Random (x1, y1, x2, y2) boxes of `shape` + [4], many overlapping."""
    xy = rng.uniform(0, 40, shape + (2,))
    wh = rng.uniform(4, 30, shape + (2,))
    return np.concatenate([xy, xy + wh], -1).astype(dt)


def check(tag, inputs, cases):
    """Runs the cases (op, attrs dict, slots, outputs, {output: want}): floats within 1e-5
    (fp32) or 1e-12 (fp64), integers exactly. Returns whether all matched, and the outputs
    (None when rill failed)."""
    outs = op_reference.run_cases(rill, work, tag, inputs, [(c[0], attrs(**c[1]), c[2], c[3]) for c in cases])
    if outs is None:
        return False, None
    ok = True
    for got, (op, a, _, names, want) in zip(outs, cases):
        for g, name in zip(got, names):
            floating = np.issubdtype(want[name].dtype, np.floating)
            tol = (1e-5 if want[name].dtype == np.float32 else 1e-12) if floating else 0
            ok &= op_reference.matches("%s %s %s %s" % (tag, op, sorted(a.items())[:3], name), g, want[name], tol)
    return ok, outs
    return ok


def f32(a):
    """Attributes with their floats rounded to fp32, as FLOAT attributes hold them."""
    round32 = lambda v: float(np.float32(v)) if isinstance(v, float) else v  # noqa: E731
    return {k: [round32(x) for x in v] if isinstance(v, list) else round32(v) for k, v in a.items()}


def anchors_and_boxes(dt, tag):
    feat = rng.standard_normal((2, 3, 5, 7)).astype(dt)
    image = rng.standard_normal((2, 3, 40, 56)).astype(dt)
    prior_a = f32(dict(min_sizes=[4.0, 9.0], max_sizes=[8.0, 16.0], aspect_ratios=[2.0, 3.0, 2.0000001], flip=True,
                   clip=True, variances=[0.1, 0.1, 0.2, 0.2], offset=0.5))
    prior_b = f32(dict(prior_a, min_max_aspect_ratios_order=True, clip=False, step_w=9.0, step_h=7.0, offset=0.3))
    prior_c = f32(dict(min_sizes=[5.0], aspect_ratios=[0.5], flip=False, variances=[0.1, 0.2, 0.3, 0.4]))
    dense_a = f32(dict(fixed_sizes=[8.0, 16.0], fixed_ratios=[1.0, 2.0], densities=[3, 1],
                       variances=[0.1, 0.1, 0.2, 0.2]))
    dense_b = f32(dict(dense_a, step_w=10.0, step_h=6.0, offset=0.25, clip=False, flatten_to_2d=True))
    hw, ihw = feat.shape[2:], image.shape[2:]
    priors = boxes(rng, (6,), dt) / dt(64)
    pixel_priors = boxes(rng, (6,), dt)
    prior_var = rng.uniform(0.1, 0.3, (6, 4)).astype(dt)
    targets = boxes(rng, (5,), dt) / dt(64)
    pixel_targets = boxes(rng, (5,), dt)
    offsets = (rng.standard_normal((5, 6, 4)) * 0.3).astype(dt)
    offsets_t = (rng.standard_normal((6, 3, 4)) * 0.3).astype(dt)
    encode = dict(code_type="encode_center_size")
    decode = dict(code_type="decode_center_size")
    var = f32(dict(variance=[0.1, 0.1, 0.2, 0.2]))
    nms_boxes = boxes(rng, (2, 25), dt) / dt(80)
    pixel_nms_boxes = boxes(rng, (2, 25), dt)
    nms_scores = rng.uniform(0, 1, (2, 3, 25)).astype(dt)
    matrix_a = f32(dict(background_label=0, score_threshold=0.2, post_threshold=0.1, nms_top_k=15, keep_top_k=20))
    matrix_b = f32(dict(background_label=-1, score_threshold=0.4, nms_top_k=-1, keep_top_k=-1, use_gaussian=True,
                        gaussian_sigma=2.5, normalized=False))
    inputs = {"feat": feat, "image": image, "p": priors, "pp": pixel_priors, "pv": prior_var, "t": targets,
              "pt": pixel_targets, "off": offsets, "offt": offsets_t, "bb": nms_boxes, "pbb": pixel_nms_boxes, "sc": nms_scores}
    pb = {"Input": "feat", "Image": "image"}
    out = ["OutputBox"]
    cases = [("prior_box", a, pb, ["Boxes", "Variances"], dict(zip(["Boxes", "Variances"], ref.prior_box(hw, ihw, a, dt))))
             for a in (prior_a, prior_b, prior_c)]
    cases += [("density_prior_box", a, pb, ["Boxes", "Variances"],
               dict(zip(["Boxes", "Variances"], ref.density_prior_box(hw, ihw, a, dt)))) for a in (dense_a, dense_b)]
    cases += [
        ("box_coder", encode, {"PriorBox": "p", "PriorBoxVar": "pv", "TargetBox": "t"}, out,
         {"OutputBox": ref.box_coder(priors, prior_var, targets, encode)}),
        ("box_coder", dict(encode, box_normalized=False, **var), {"PriorBox": "pp", "TargetBox": "pt"}, out,
         {"OutputBox": ref.box_coder(pixel_priors, None, pixel_targets, dict(encode, box_normalized=False, **var))}),
        ("box_coder", encode, {"PriorBox": "p", "TargetBox": "t"}, out,
         {"OutputBox": ref.box_coder(priors, None, targets, encode)}),
        ("box_coder", decode, {"PriorBox": "p", "PriorBoxVar": "pv", "TargetBox": "off"}, out,
         {"OutputBox": ref.box_coder(priors, prior_var, offsets, decode)}),
        ("box_coder", dict(decode, axis=1, box_normalized=False, **var), {"PriorBox": "pp", "TargetBox": "offt"}, out,
         {"OutputBox": ref.box_coder(pixel_priors, None, offsets_t, dict(decode, axis=1, box_normalized=False, **var))}),
        ("box_coder", dict(decode, axis=1), {"PriorBox": "p", "PriorBoxVar": "pv", "TargetBox": "offt"}, out,
         {"OutputBox": ref.box_coder(priors, prior_var, offsets_t, dict(decode, axis=1))}),
        ("iou_similarity", {}, {"X": "t", "Y": "p"}, ["Out"], {"Out": ref.iou_similarity(targets, priors, True)}),
        ("iou_similarity", dict(box_normalized=False), {"X": "pt", "Y": "pp"}, ["Out"],
         {"Out": ref.iou_similarity(pixel_targets, pixel_priors, False)}),
        ("matrix_nms", matrix_a, {"BBoxes": "bb", "Scores": "sc"}, ["Out", "Index", "RoisNum"],
         ref.matrix_nms(nms_boxes, nms_scores, matrix_a)),
        ("matrix_nms", matrix_b, {"BBoxes": "pbb", "Scores": "sc"}, ["Out", "Index", "RoisNum"],
         ref.matrix_nms(pixel_nms_boxes, nms_scores, matrix_b)),
    ]
    return check(tag + "_anchors", inputs, cases)[0]


def roi_align(dt, tag):
    x = rng.standard_normal((2, 3, 9, 7)).astype(dt)
    # Regions in the image's pixels (spatial_scale 0.5), one reaching past the map, one tiny.
    regions = np.array([[1, 1, 9, 13], [4, 2, 14, 17], [0, 0, 20, 24], [-3, 5, 6, 22], [6, 6, 6.5, 6.4]], dt)
    counts = np.array([2, 3], np.int32)
    dout = rng.standard_normal((5, 3, 3, 2)).astype(dt)
    image_of = np.repeat(np.arange(2), counts).astype(dt)[:, None]
    cases = []
    for a in (dict(pooled_height=3, pooled_width=2, spatial_scale=0.5, sampling_ratio=-1),
              dict(pooled_height=3, pooled_width=2, spatial_scale=0.5, sampling_ratio=2, aligned=True),
              dict(pooled_height=3, pooled_width=2, spatial_scale=0.5, sampling_ratio=-1, aligned=True)):
        xt = torch.from_numpy(x).requires_grad_(True)
        out = torchvision.ops.roi_align(xt, torch.from_numpy(np.hstack([image_of, regions])), (3, 2),
                                        spatial_scale=0.5, sampling_ratio=a["sampling_ratio"],
                                        aligned=a.get("aligned", False))
        out.backward(torch.from_numpy(dout))
        slots = {"X": "x", "ROIs": "rois", "RoisNum": "counts"}
        cases.append(("roi_align", a, slots, ["Out"], {"Out": out.detach().numpy()}))
        cases.append(("roi_align_grad", a, dict(slots, **{"Out@GRAD": "dout"}), ["X@GRAD"],
                      {"X@GRAD": xt.grad.numpy()}))
    return check(tag + "_roi_align", {"x": x, "rois": regions, "counts": counts, "dout": dout}, cases)[0]


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
        ("yolo_box", yolo_a, {"X": "head", "ImgSize": "img"}, ["Boxes", "Scores"],
         paddle_reference._yolo_box(head, img, yolo_a)),
        ("yolo_box", yolo_b, {"X": "aware", "ImgSize": "img"}, ["Boxes", "Scores"],
         paddle_reference._yolo_box(aware, img, yolo_b)),
        ("multiclass_nms3", nms_a, {"BBoxes": "bb", "Scores": "sc"}, det,
         paddle_reference._multiclass_nms(nms_boxes, nms_scores, nms_a)),
        ("multiclass_nms3", nms_b, {"BBoxes": "bb", "Scores": "sc"}, det,
         paddle_reference._multiclass_nms(nms_boxes, nms_scores, nms_b)),
        ("multiclass_nms3", nms_c, {"BBoxes": "rb", "Scores": "rs", "RoisNum": "rois"}, det,
         paddle_reference._multiclass_nms(rows_boxes, rows_scores, nms_c, rois)),
        ("multiclass_nms2", quiet, {"BBoxes": "bb", "Scores": "sc"}, ["Out", "Index"],
         {"Out": np.zeros((0, 6), dt), "Index": np.zeros((0, 1), np.int32)}),
        ("multiclass_nms", quiet, {"BBoxes": "bb", "Scores": "sc"}, ["Out"], {"Out": np.full((1, 1), -1, dt)}),
    ]
    ok, outs = check(tag, inputs, cases)
    failed |= not ok
    if outs is not None:
        # Each kept row's Index names its box: the row's coordinates are that box's.
        out, index = outs[2][0], outs[2][1].reshape(-1)
        failed |= not op_reference.matches(tag + " Index names each row's box", out[:, 2:],
                                           nms_boxes.reshape(-1, 4)[index])
    failed |= not anchors_and_boxes(dt, tag)
    failed |= not roi_align(dt, tag)
sys.exit(1 if failed else 0)
