"""numpy references of Paddle's anchor and box ops (prior_box, density_prior_box,
box_coder, iou_similarity, matrix_nms), written from Paddle's definitions apart from Rill's
kernels: whole arrays at a time where the kernels loop, and Matrix NMS in the paper's
matrix form (arXiv:2003.10152) where the kernel walks pairs.
"""
import numpy as np


def _cells(feat_hw, img_hw, a):
    """Each cell's centre (cx [W], cy [H]) in pixels, and the steps."""
    (h, w), (ih, iw) = feat_hw, img_hw
    step_w, step_h = a.get("step_w", 0.0), a.get("step_h", 0.0)
    if step_w == 0 or step_h == 0:
        step_w, step_h = iw / w, ih / h
    offset = a.get("offset", 0.5)
    return (np.arange(w) + offset) * step_w, (np.arange(h) + offset) * step_h, step_w, step_h


def _corners(cx, cy, sizes, img_hw):
    """[H, W, P, 4] boxes of (width, height) `sizes` centred at the cells, as fractions."""
    ih, iw = img_hw
    sizes = np.asarray(sizes, np.float64)
    x = cx[None, :, None]
    y = cy[:, None, None]
    half_w, half_h = sizes[:, 0] / 2, sizes[:, 1] / 2
    shape = (len(cy), len(cx), len(sizes))
    return np.stack([np.broadcast_to((x - half_w) / iw, shape), np.broadcast_to((y - half_h) / ih, shape),
                     np.broadcast_to((x + half_w) / iw, shape), np.broadcast_to((y + half_h) / ih, shape)], -1)


def prior_box(feat_hw, img_hw, a, dtype):
    """(Boxes, Variances) of prior_box."""
    cx, cy, _, _ = _cells(feat_hw, img_hw, a)
    ratios = [1.0]
    for r in a["aspect_ratios"]:
        if all(abs(r - o) >= 1e-6 for o in ratios):
            # Paddle keeps the expanded ratios as fp32, the inverse's rounding included.
            ratios += [r, float(np.float32(1) / np.float32(r))] if a.get("flip", True) else [r]
    sizes = []
    for k, s in enumerate(a["min_sizes"]):
        by_ratio = [(s * np.sqrt(r), s / np.sqrt(r)) for r in ratios]
        biggest = [(np.sqrt(s * a["max_sizes"][k]),) * 2] if a.get("max_sizes") else []
        if a.get("min_max_aspect_ratios_order", False):
            sizes += [(s, s)] + biggest + [wh for r, wh in zip(ratios, by_ratio) if abs(r - 1) >= 1e-6]
        else:
            sizes += by_ratio + biggest
    boxes = _corners(cx, cy, sizes, img_hw)
    if a.get("clip", True):
        boxes = boxes.clip(0, 1)
    return boxes.astype(dtype), np.broadcast_to(np.asarray(a["variances"]), boxes.shape).astype(dtype)


def density_prior_box(feat_hw, img_hw, a, dtype):
    """(Boxes, Variances) of density_prior_box: each box clipped to [0, 1] as the op does."""
    cx, cy, step_w, step_h = _cells(feat_hw, img_hw, a)
    step = int((step_w + step_h) * 0.5)
    ih, iw = img_hw
    per_cell = []  # (dx, dy, width, height) of each box relative to the cell's centre
    for size, density in zip(a["fixed_sizes"], a["densities"]):
        shift = step // density
        for r in a["fixed_ratios"]:
            for di in range(density):
                for dj in range(density):
                    per_cell.append((-step / 2 + shift / 2 + dj * shift, -step / 2 + shift / 2 + di * shift,
                                     size * np.sqrt(r), size / np.sqrt(r)))
    p = np.asarray(per_cell)
    x = cx[None, :, None] + p[:, 0]
    y = cy[:, None, None] + p[:, 1]
    shape = (len(cy), len(cx), len(p))
    boxes = np.stack([np.broadcast_to(np.maximum((x - p[:, 2] / 2) / iw, 0), shape),
                      np.broadcast_to(np.maximum((y - p[:, 3] / 2) / ih, 0), shape),
                      np.broadcast_to(np.minimum((x + p[:, 2] / 2) / iw, 1), shape),
                      np.broadcast_to(np.minimum((y + p[:, 3] / 2) / ih, 1), shape)], -1)
    if a.get("clip", True):
        boxes = boxes.clip(0, 1)
    if a.get("flatten_to_2d", False):
        boxes = boxes.reshape(-1, 4)
    return boxes.astype(dtype), np.broadcast_to(np.asarray(a["variances"]), boxes.shape).astype(dtype)


def _size_centre(b, one, midpoint):
    w = b[..., 2] - b[..., 0] + one
    h = b[..., 3] - b[..., 1] + one
    if midpoint:
        return w, h, (b[..., 0] + b[..., 2]) / 2, (b[..., 1] + b[..., 3]) / 2
    return w, h, b[..., 0] + w / 2, b[..., 1] + h / 2


def box_coder(prior, prior_var, target, a):
    """OutputBox of box_coder; prior_var [M, 4] or None (then a's variance, or 1s)."""
    one = 0.0 if a.get("box_normalized", True) else 1.0
    var = prior_var if prior_var is not None else np.broadcast_to(np.asarray(a.get("variance") or [1.0] * 4,
                                                                             prior.dtype), prior.shape)
    pw, ph, pcx, pcy = _size_centre(prior, one, False)
    if a.get("code_type", "encode_center_size") == "encode_center_size":
        tw, th, tcx, tcy = _size_centre(target[:, None, :], one, True)
        out = np.stack([(tcx - pcx) / pw, (tcy - pcy) / ph, np.log(np.abs(tw / pw)), np.log(np.abs(th / ph))], -1)
        return (out / var[None]).astype(prior.dtype)
    if a.get("axis", 0) == 1:  # prior i for row i
        pw, ph, pcx, pcy, var = pw[:, None], ph[:, None], pcx[:, None], pcy[:, None], var[:, None, :]
    else:
        var = var[None]
    cx = var[..., 0] * target[..., 0] * pw + pcx
    cy = var[..., 1] * target[..., 1] * ph + pcy
    w = np.exp(var[..., 2] * target[..., 2]) * pw
    h = np.exp(var[..., 3] * target[..., 3]) * ph
    return np.stack([cx - w / 2, cy - h / 2, cx + w / 2 - one, cy + h / 2 - one], -1).astype(prior.dtype)


def iou_similarity(x, y, normalized):
    """Out of iou_similarity: [N, M] IoUs, eps 1e-10 in the union."""
    one = 0.0 if normalized else 1.0
    area = lambda b: (b[..., 2] - b[..., 0] + one) * (b[..., 3] - b[..., 1] + one)  # noqa: E731
    iw = np.maximum(np.minimum(x[:, None, 2], y[None, :, 2]) - np.maximum(x[:, None, 0], y[None, :, 0]) + one, 0)
    ih = np.maximum(np.minimum(x[:, None, 3], y[None, :, 3]) - np.maximum(x[:, None, 1], y[None, :, 1]) + one, 0)
    inter = iw * ih
    return (inter / (area(x)[:, None] + area(y)[None, :] - inter + 1e-10)).astype(x.dtype)


def _overlaps(b, normalized):
    """[K, K] IoUs by Paddle's JaccardOverlap: 0 for boxes apart; areas of inverted boxes 0."""
    one = 0.0 if normalized else 1.0
    w = b[:, 2] - b[:, 0]
    h = b[:, 3] - b[:, 1]
    area = np.where((w < 0) | (h < 0), 0, (w + one) * (h + one))
    apart = ((b[None, :, 0] > b[:, None, 2]) | (b[None, :, 2] < b[:, None, 0]) |
             (b[None, :, 1] > b[:, None, 3]) | (b[None, :, 3] < b[:, None, 1]))
    iw = np.minimum(b[:, None, 2], b[None, :, 2]) - np.maximum(b[:, None, 0], b[None, :, 0]) + one
    ih = np.minimum(b[:, None, 3], b[None, :, 3]) - np.maximum(b[:, None, 1], b[None, :, 1]) + one
    inter = iw * ih
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area[:, None] + area[None, :] - inter)
    return np.where(apart, 0, iou)


def matrix_nms(boxes, scores, a):
    """{Out, Index, RoisNum} of matrix_nms over BBoxes [N, M, 4], Scores [N, C, M]."""
    dtype = scores.dtype
    outs, index, counts = [], [], []
    for i in range(scores.shape[0]):
        dets = []  # (score, class, box)
        for c in range(scores.shape[1]):
            if c == a.get("background_label", 0):
                continue
            s = scores[i, c].astype(np.float64)
            keep = np.nonzero(s > a["score_threshold"])[0]
            order = keep[np.argsort(-s[keep], kind="stable")]
            if a.get("nms_top_k", -1) > -1:
                order = order[:a["nms_top_k"]]
            if len(order) == 0:
                continue
            iou = np.triu(_overlaps(boxes[i, order].astype(np.float64), a.get("normalized", True)), 1)
            most = iou.max(axis=0)  # each box's largest overlap with a better one
            if a.get("use_gaussian", False):
                decay = np.exp((most[:, None] ** 2 - iou ** 2) * a.get("gaussian_sigma", 2.0))
            else:
                decay = (1 - iou) / (1 - most[:, None])
            decayed = np.minimum(decay.min(axis=0), 1) * s[order]
            dets += [(d, c, m) for d, m in zip(decayed, order) if d > a.get("post_threshold", 0.0)]
        dets.sort(key=lambda d: -d[0])  # stable: class, then box order among ties
        if a.get("keep_top_k", -1) > -1:
            dets = dets[:a["keep_top_k"]]
        outs += [[c, d] + list(boxes[i, m]) for d, c, m in dets]
        index += [i * scores.shape[2] + m for _, _, m in dets]
        counts.append(len(dets))
    return {"Out": np.asarray(outs, np.float64).reshape(-1, 6).astype(dtype),
            "Index": np.asarray(index, np.int32).reshape(-1, 1), "RoisNum": np.asarray(counts, np.int32)}
