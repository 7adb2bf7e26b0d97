"""fluid.layers.detection: the layers detectors are built from, as Fluid's take their
arguments: priors (prior_box, density_prior_box), box encoding (box_coder, iou_similarity),
heads (yolo_box), region features (roi_align, roi_pool), text boxes (polygon_box_transform), and the non-maximum suppressions that end a
detector (multiclass_nms, matrix_nms), whose outputs are LoD tensors of each image's
detections."""
from rill.fluid.framework import Variable
from rill.fluid.layer_helper import LayerHelper
from rill.fluid.layers.checks import check_type, check_variable_and_dtype

__all__ = ["prior_box", "density_prior_box", "box_coder", "iou_similarity", "yolo_box", "roi_align", "roi_pool",
           "polygon_box_transform", "multiclass_nms", "matrix_nms"]

_FLOATS = ["float32", "float64"]


def _outputs(helper, dtype, count, stop_gradient=True):
    outs = []
    for _ in range(count):
        v = helper.create_tmp_variable(dtype=dtype)
        v.stop_gradient = stop_gradient
        outs.append(v)
    return outs


def _pair_of_steps(steps, layer):
    if not isinstance(steps, (list, tuple)) or len(steps) != 2:
        raise ValueError("%s: steps must be a list of two numbers [w, h], got %r" % (layer, steps))
    return float(steps[0]), float(steps[1])


def prior_box(input, image, min_sizes, max_sizes=None, aspect_ratios=[1.0], variance=[0.1, 0.1, 0.2, 0.2],
              flip=False, clip=False, steps=[0.0, 0.0], offset=0.5, name=None, min_max_aspect_ratios_order=False):
    """SSD's prior boxes for each position of input's feature map over image: (Boxes,
    Variances), each [H, W, priors, 4]."""
    check_variable_and_dtype(input, "input", _FLOATS, "prior_box")
    check_variable_and_dtype(image, "image", _FLOATS, "prior_box")
    helper = LayerHelper("prior_box", **locals())
    min_sizes = [float(s) for s in (min_sizes if isinstance(min_sizes, (list, tuple)) else [min_sizes])]
    max_sizes = [float(s) for s in (max_sizes if isinstance(max_sizes, (list, tuple)) else
                                    [] if max_sizes is None else [max_sizes])]
    ratios = [float(r) for r in (aspect_ratios if isinstance(aspect_ratios, (list, tuple)) else [aspect_ratios])]
    if max_sizes and len(max_sizes) != len(min_sizes):
        raise ValueError("prior_box: %d max_sizes for %d min_sizes" % (len(max_sizes), len(min_sizes)))
    step_w, step_h = _pair_of_steps(steps, "prior_box")
    boxes, variances = _outputs(helper, input.dtype, 2)
    helper.append_op(type="prior_box", inputs={"Input": input, "Image": image},
                     outputs={"Boxes": boxes, "Variances": variances},
                     attrs={"min_sizes": min_sizes, "max_sizes": max_sizes, "aspect_ratios": ratios,
                            "variances": [float(v) for v in variance], "flip": flip, "clip": clip,
                            "step_w": step_w, "step_h": step_h, "offset": float(offset),
                            "min_max_aspect_ratios_order": min_max_aspect_ratios_order})
    return boxes, variances


def density_prior_box(input, image, densities=None, fixed_sizes=None, fixed_ratios=None,
                      variance=[0.1, 0.1, 0.2, 0.2], clip=False, steps=[0.0, 0.0], offset=0.5, flatten_to_2d=False,
                      name=None):
    """Prior boxes placed densely (densities[i]^2 per position for fixed_sizes[i], one per
    fixed ratio): (Boxes, Variances), [H, W, priors, 4] or [H * W * priors, 4] flattened."""
    check_variable_and_dtype(input, "input", _FLOATS, "density_prior_box")
    check_variable_and_dtype(image, "image", _FLOATS, "density_prior_box")
    for value, arg in ((densities, "densities"), (fixed_sizes, "fixed_sizes"), (fixed_ratios, "fixed_ratios")):
        check_type(value, arg, (list, tuple), "density_prior_box")
    if len(densities) != len(fixed_sizes):
        raise ValueError("density_prior_box: %d densities for %d fixed_sizes" % (len(densities), len(fixed_sizes)))
    helper = LayerHelper("density_prior_box", **locals())
    step_w, step_h = _pair_of_steps(steps, "density_prior_box")
    boxes, variances = _outputs(helper, input.dtype, 2)
    helper.append_op(type="density_prior_box", inputs={"Input": input, "Image": image},
                     outputs={"Boxes": boxes, "Variances": variances},
                     attrs={"densities": [int(d) for d in densities], "fixed_sizes": [float(s) for s in fixed_sizes],
                            "fixed_ratios": [float(r) for r in fixed_ratios],
                            "variances": [float(v) for v in variance], "clip": clip, "step_w": step_w,
                            "step_h": step_h, "offset": float(offset), "flatten_to_2d": flatten_to_2d})
    return boxes, variances


def box_coder(prior_box, prior_box_var, target_box, code_type="encode_center_size", box_normalized=True, name=None,
              axis=0):
    """target_box encoded against (or decoded from) prior_box, scaled by prior_box_var (a
    Variable of one variance per prior, or four numbers for all)."""
    check_variable_and_dtype(prior_box, "prior_box", _FLOATS, "box_coder")
    check_variable_and_dtype(target_box, "target_box", _FLOATS, "box_coder")
    if code_type not in ("encode_center_size", "decode_center_size"):
        raise ValueError("box_coder: code_type must be encode_center_size or decode_center_size, got %r"
                         % (code_type,))
    helper = LayerHelper("box_coder", **locals())
    out, = _outputs(helper, prior_box.dtype, 1, stop_gradient=False)
    inputs = {"PriorBox": prior_box, "TargetBox": target_box}
    attrs = {"code_type": code_type, "box_normalized": box_normalized, "axis": axis}
    if isinstance(prior_box_var, Variable):
        inputs["PriorBoxVar"] = prior_box_var
    elif isinstance(prior_box_var, (list, tuple)) and len(prior_box_var) == 4:
        attrs["variance"] = [float(v) for v in prior_box_var]
    elif prior_box_var is not None:
        raise TypeError("box_coder: prior_box_var must be a Variable or a list of 4 numbers, got %r"
                        % (prior_box_var,))
    helper.append_op(type="box_coder", inputs=inputs, outputs={"OutputBox": out}, attrs=attrs)
    return out


def iou_similarity(x, y, box_normalized=True, name=None):
    """The IoU of each box of x [N, 4] with each of y [M, 4]: [N, M]."""
    check_variable_and_dtype(x, "x", _FLOATS, "iou_similarity")
    check_variable_and_dtype(y, "y", _FLOATS, "iou_similarity")
    helper = LayerHelper("iou_similarity", **locals())
    out, = _outputs(helper, x.dtype, 1, stop_gradient=False)
    helper.append_op(type="iou_similarity", inputs={"X": x, "Y": y}, outputs={"Out": out},
                     attrs={"box_normalized": box_normalized})
    return out


def yolo_box(x, img_size, anchors, class_num, conf_thresh, downsample_ratio, clip_bbox=True, name=None,
             scale_x_y=1.0, iou_aware=False, iou_aware_factor=0.5):
    """YOLOv3's head decoded: (boxes [N, M, 4] in image pixels, scores [N, M, class_num]).
    iou_aware (paddle.vision.ops.yolo_box's): x has one IoU prediction channel per anchor in
    front, and a box's confidence is objectness^(1 - iou_aware_factor) * iou^iou_aware_factor."""
    check_variable_and_dtype(x, "x", _FLOATS, "yolo_box")
    check_variable_and_dtype(img_size, "img_size", ["int32"], "yolo_box")
    check_type(anchors, "anchors", (list, tuple), "yolo_box")
    check_type(class_num, "class_num", (int,), "yolo_box")
    check_type(conf_thresh, "conf_thresh", (float, int), "yolo_box")
    helper = LayerHelper("yolo_box", **locals())
    boxes, scores = _outputs(helper, x.dtype, 2)
    helper.append_op(type="yolo_box", inputs={"X": x, "ImgSize": img_size}, outputs={"Boxes": boxes, "Scores": scores},
                     attrs={"anchors": [int(a) for a in anchors], "class_num": class_num,
                            "conf_thresh": float(conf_thresh), "downsample_ratio": int(downsample_ratio),
                            "clip_bbox": clip_bbox, "scale_x_y": float(scale_x_y), "iou_aware": bool(iou_aware),
                            "iou_aware_factor": float(iou_aware_factor)})
    return boxes, scores


def roi_align(input, rois, pooled_height=1, pooled_width=1, spatial_scale=1.0, sampling_ratio=-1, rois_num=None,
              name=None):
    """Each region of rois ([R, 4], a LoD or rois_num saying each image's) pooled from input
    [N, C, H, W] by bilinear sampling: [R, C, pooled_height, pooled_width]."""
    check_variable_and_dtype(input, "input", _FLOATS, "roi_align")
    check_variable_and_dtype(rois, "rois", _FLOATS, "roi_align")
    helper = LayerHelper("roi_align", **locals())
    out, = _outputs(helper, input.dtype, 1, stop_gradient=False)
    inputs = {"X": input, "ROIs": rois}
    if rois_num is not None:
        inputs["RoisNum"] = rois_num
    helper.append_op(type="roi_align", inputs=inputs, outputs={"Out": out},
                     attrs={"pooled_height": pooled_height, "pooled_width": pooled_width,
                            "spatial_scale": float(spatial_scale), "sampling_ratio": sampling_ratio})
    return out


def roi_pool(input, rois, pooled_height=1, pooled_width=1, spatial_scale=1.0, rois_num=None, name=None):
    """Each region of rois ([R, 4], a LoD or rois_num saying each image's) max-pooled from
    input [N, C, H, W]: [R, C, pooled_height, pooled_width]."""
    check_variable_and_dtype(input, "input", _FLOATS, "roi_pool")
    check_variable_and_dtype(rois, "rois", _FLOATS, "roi_pool")
    helper = LayerHelper("roi_pool", **locals())
    out, = _outputs(helper, input.dtype, 1, stop_gradient=False)
    argmax, = _outputs(helper, "int64", 1)
    inputs = {"X": input, "ROIs": rois}
    if rois_num is not None:
        inputs["RoisNum"] = rois_num
    helper.append_op(type="roi_pool", inputs=inputs, outputs={"Out": out, "Argmax": argmax},
                     attrs={"pooled_height": pooled_height, "pooled_width": pooled_width,
                            "spatial_scale": float(spatial_scale)})
    return out


def polygon_box_transform(input, name=None):
    """A text detector's offsets [N, G, H, W] (x and y in turn) made corner coordinates."""
    check_variable_and_dtype(input, "input", _FLOATS, "polygon_box_transform")
    helper = LayerHelper("polygon_box_transform", **locals())
    out, = _outputs(helper, input.dtype, 1)
    out._shape = list(input.shape)
    helper.append_op(type="polygon_box_transform", inputs={"Input": input}, outputs={"Output": out})
    return out


def multiclass_nms(bboxes, scores, score_threshold, nms_top_k, keep_top_k, nms_threshold=0.3, normalized=True,
                   nms_eta=1.0, background_label=0, name=None):
    """Per-class NMS of bboxes [N, M, 4] scored by scores [N, C, M]: [detections, 6] rows of
    (label, score, x1, y1, x2, y2), a LoD giving each image's."""
    check_variable_and_dtype(bboxes, "BBoxes", _FLOATS, "multiclass_nms")
    check_variable_and_dtype(scores, "Scores", _FLOATS, "multiclass_nms")
    check_type(score_threshold, "score_threshold", (float, int), "multiclass_nms")
    check_type(nms_top_k, "nms_top_k", (int,), "multiclass_nms")
    check_type(keep_top_k, "keep_top_k", (int,), "multiclass_nms")
    helper = LayerHelper("multiclass_nms", **locals())
    out, = _outputs(helper, bboxes.dtype, 1)
    helper.append_op(type="multiclass_nms", inputs={"BBoxes": bboxes, "Scores": scores}, outputs={"Out": out},
                     attrs={"background_label": background_label, "score_threshold": float(score_threshold),
                            "nms_top_k": nms_top_k, "nms_threshold": float(nms_threshold), "nms_eta": float(nms_eta),
                            "keep_top_k": keep_top_k, "normalized": normalized})
    return out


def matrix_nms(bboxes, scores, score_threshold, post_threshold, nms_top_k, keep_top_k, use_gaussian=False,
               gaussian_sigma=2.0, background_label=0, normalized=True, return_index=False, name=None):
    """Matrix NMS (SOLOv2's) of bboxes [N, M, 4] scored by scores [N, C, M]: the detections
    as multiclass_nms gives them, and with return_index their rows' indices too."""
    check_variable_and_dtype(bboxes, "BBoxes", _FLOATS, "matrix_nms")
    check_variable_and_dtype(scores, "Scores", _FLOATS, "matrix_nms")
    for value, arg in ((score_threshold, "score_threshold"), (post_threshold, "post_threshold"),
                       (gaussian_sigma, "gaussian_sigma")):
        check_type(value, arg, (float, int), "matrix_nms")
    for value, arg in ((nms_top_k, "nms_top_k"), (keep_top_k, "keep_top_k"), (background_label, "background_label")):
        check_type(value, arg, (int,), "matrix_nms")
    helper = LayerHelper("matrix_nms", **locals())
    out, = _outputs(helper, bboxes.dtype, 1)
    index, rois_num = _outputs(helper, "int32", 2)
    helper.append_op(type="matrix_nms", inputs={"BBoxes": bboxes, "Scores": scores},
                     outputs={"Out": out, "Index": index, "RoisNum": rois_num},
                     attrs={"background_label": background_label, "score_threshold": float(score_threshold),
                            "post_threshold": float(post_threshold), "nms_top_k": nms_top_k,
                            "keep_top_k": keep_top_k, "normalized": normalized, "use_gaussian": use_gaussian,
                            "gaussian_sigma": float(gaussian_sigma)})
    return (out, index) if return_index else out
