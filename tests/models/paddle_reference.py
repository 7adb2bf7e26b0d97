"""An inference model as Paddle saved it, run by numpy and PyTorch: the reference the real
models are checked against, built without any of Rill's kernels.

It reads the model's files itself: the program (framework.proto, parsed by protobuf), and
the parameters in Fluid's LoDTensor format, one file each or combined in name order. It then
runs block 0's ops in order, each by Paddle's definition of the op (Paddle's operator
sources are where these facts come from), with numpy, and with torch.nn.functional where an
op is a convolution, a pooling or an interpolation. Only the ops the models in
../shared/models use are here; any other op is an error naming it.

    outputs = run_model(model_dir_or_pdmodel, {"x": array})   # {fetch var: array}, in col order
    outputs = run_model(text_model, {"words": ids}, {"words": [0, 16, 46, 58]})  # a fed LoD

or, in a process of its own (a test under a sanitizer keeps PyTorch out of its process):

    python3 paddle_reference.py MODEL OUT.npz FEED=FILE.npy ... [FEED@lod=0,16,46] ...
                                      # OUT.npz: the fetches, and "__order__", their names

A LoD here is one level of offsets (the sequence ops' models have one), kept per variable:
fed, passed on by the ops that keep their input's rows (as Paddle's ShareLoD), and read by
the sequence ops.
"""
import importlib.util
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

# framework.proto's VarType.Type numbers of the dtypes and of the feed and fetch lists.
_DTYPES = {0: np.bool_, 1: np.int16, 2: np.int32, 3: np.int64, 4: np.float16, 5: np.float32, 6: np.float64,
           20: np.uint8, 21: np.int8}
_FEED_MINIBATCH, _FETCH_LIST = 9, 10


_FRAMEWORK_PB2 = []


def _proto():
    """framework.proto's messages: Rill's generated framework_pb2, found on the path and
    loaded on its own, without the rill package (whose extension this process keeps out).
    Loaded when a model is read: the op references above need no protobuf."""
    if not _FRAMEWORK_PB2:
        for root in sys.path:
            path = os.path.join(root, "rill", "proto", "framework_pb2.py")
            if os.path.exists(path):
                spec = importlib.util.spec_from_file_location("framework_pb2", path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                _FRAMEWORK_PB2.append(module)
                break
        else:
            raise ImportError("rill/proto/framework_pb2.py is on no path entry (PYTHONPATH=BUILD/python)")
    return _FRAMEWORK_PB2[0]


def program_file(path):
    if path.endswith(".pdmodel"):
        return path
    if os.path.exists(os.path.join(path, "__model__")):
        return os.path.join(path, "__model__")
    found = [f for f in os.listdir(path) if f.endswith(".pdmodel")]
    assert len(found) == 1, "%s: no __model__ and %d .pdmodel files" % (path, len(found))
    return os.path.join(path, found[0])


def _read_tensor(f):
    """One LoDTensor record: version, LoD, then version, TensorDesc, data."""
    (version,) = struct.unpack("<I", f.read(4))
    assert version == 0, version
    (levels,) = struct.unpack("<Q", f.read(8))
    for _ in range(levels):
        (size,) = struct.unpack("<Q", f.read(8))
        f.read(size)
    (version,) = struct.unpack("<I", f.read(4))
    assert version == 0, version
    (desc_size,) = struct.unpack("<i", f.read(4))
    desc = _proto().VarType.TensorDesc()
    desc.ParseFromString(f.read(desc_size))
    dtype = np.dtype(_DTYPES[desc.data_type])
    shape = tuple(desc.dims)
    count = int(np.prod(shape)) if shape else 1
    return np.frombuffer(f.read(count * dtype.itemsize), dtype).reshape(shape).copy()


def load_model(path):
    """(ProgramDesc, {parameter: array}) of the model at ``path``."""
    pfile = program_file(path)
    program = _proto().ProgramDesc()
    with open(pfile, "rb") as f:
        program.ParseFromString(f.read())
    names = sorted(v.name for v in program.blocks[0].vars
                   if v.persistable and v.type.type not in (_FEED_MINIBATCH, _FETCH_LIST))
    params = {}
    combined = pfile[:-len(".pdmodel")] + ".pdiparams" if pfile.endswith(".pdmodel") else None
    if combined is None and os.path.exists(os.path.join(os.path.dirname(pfile), "__params__")):
        combined = os.path.join(os.path.dirname(pfile), "__params__")
    if combined:
        with open(combined, "rb") as f:
            for n in names:
                params[n] = _read_tensor(f)
            assert f.read(1) == b"", "%s holds more records than the program's parameters" % combined
    else:
        for n in names:
            with open(os.path.join(os.path.dirname(pfile), n), "rb") as f:
                params[n] = _read_tensor(f)
    return program, params


def _attrs(op):
    framework_pb2 = _proto()
    out = {}
    for a in op.attrs:
        t = a.type
        if t in (framework_pb2.INT, framework_pb2.LONG):
            out[a.name] = a.i if t == framework_pb2.INT else a.l
        elif t == framework_pb2.FLOAT:
            out[a.name] = a.f
        elif t == framework_pb2.FLOAT64:
            out[a.name] = a.float64
        elif t == framework_pb2.STRING:
            out[a.name] = a.s
        elif t == framework_pb2.BOOLEAN:
            out[a.name] = a.b
        elif t == framework_pb2.INTS:
            out[a.name] = list(a.ints)
        elif t == framework_pb2.LONGS:
            out[a.name] = list(a.longs)
        elif t == framework_pb2.FLOATS:
            out[a.name] = list(a.floats)
        elif t == framework_pb2.BOOLEANS:
            out[a.name] = list(a.bools)
        elif t == framework_pb2.STRINGS:
            out[a.name] = list(a.strings)
    return out


def _broadcast_y(x, y, axis):
    """Y shaped to broadcast against X by Paddle's rule: Y's dims placed at ``axis`` of X's."""
    if axis == -1 or x.ndim == y.ndim:
        return y
    return y.reshape((1,) * axis + y.shape + (1,) * (x.ndim - axis - y.ndim))


def _conv_paddings(a, x_hw, k_hw, strides, dilations):
    """Paddle's conv/pool padding: EXPLICIT [h, w] or [top, bottom, left, right], SAME or
    VALID; returns (top, bottom, left, right)."""
    algo = a.get("padding_algorithm", "EXPLICIT")
    p = list(a.get("paddings", [0, 0]))
    if algo == "VALID":
        return [0, 0, 0, 0]
    if algo == "SAME":
        out = []
        for size, k, s in zip(x_hw, k_hw, strides):
            total = max((-(-size // s) - 1) * s + k - size, 0)
            out += [total // 2, total - total // 2]
        return out
    if len(p) == 2:
        return [p[0], p[0], p[1], p[1]]
    return p


def _conv2d(x, w, a):
    strides = a.get("strides", [1, 1])
    dilations = a.get("dilations", [1, 1])
    k = w.shape[2:]
    if a.get("padding_algorithm") == "SAME":
        dilations = [1, 1]
    pads = _conv_paddings(a, x.shape[2:], [(kk - 1) * d + 1 for kk, d in zip(k, dilations)], strides, dilations)
    tx = F.pad(torch.from_numpy(x), (pads[2], pads[3], pads[0], pads[1]))
    out = F.conv2d(tx, torch.from_numpy(w), stride=strides, dilation=dilations, groups=a.get("groups", 1))
    return out.numpy()


def _pool2d(x, a):
    kind = a.get("pooling_type", "max")
    if a.get("global_pooling", False) or (a.get("adaptive", False) and list(a["ksize"]) == [1, 1]):
        return x.max(axis=(2, 3), keepdims=True) if kind == "max" else x.mean(axis=(2, 3), keepdims=True)
    assert not a.get("adaptive", False), "adaptive pooling other than to 1x1"
    k = a["ksize"]
    strides = a.get("strides", [1, 1])
    pads = _conv_paddings(a, x.shape[2:], k, strides, [1, 1])
    tx = torch.from_numpy(x)
    ceil = a.get("ceil_mode", False)
    if kind == "max":
        tx = F.pad(tx, (pads[2], pads[3], pads[0], pads[1]), value=-np.inf)
        return F.max_pool2d(tx, k, strides, ceil_mode=ceil).numpy()
    # Average: exclusive (the default) divides by the window's cells inside X.
    ones = torch.ones((1, 1) + tuple(x.shape[2:]), dtype=tx.dtype)
    tx = F.pad(tx, (pads[2], pads[3], pads[0], pads[1]))
    ones = F.pad(ones, (pads[2], pads[3], pads[0], pads[1]))
    sums = F.avg_pool2d(tx, k, strides, ceil_mode=ceil, divisor_override=1)
    if a.get("exclusive", True):
        counts = F.avg_pool2d(ones, k, strides, ceil_mode=ceil, divisor_override=1)
    else:
        counts = torch.full_like(sums[:1, :1], float(k[0] * k[1]))
    return (sums / counts).numpy()


def _flatten(x, num_col_dims):
    return x.reshape(int(np.prod(x.shape[:num_col_dims])), -1)


# The input slot whose LoD each op's first output keeps (Paddle's ShareLoD).
_SHARES_LOD = {"lookup_table": "Ids", "lookup_table_v2": "Ids", "tanh": "X", "relu": "X", "sigmoid": "X",
               "sequence_conv": "X", "elementwise_add": "X", "elementwise_sub": "X", "elementwise_mul": "X",
               "elementwise_div": "X"}


def _sequence_conv(x, filt, offsets, a):
    """Paddle's sequence_conv: each row's context rows (zeros outside its sequence) side by
    side, times the filter."""
    assert not a.get("paddingTrainable", False)
    length, start, width = a.get("contextLength"), a.get("contextStart", 0), x.shape[1]
    col = np.zeros((x.shape[0], length * width), x.dtype)
    for b, e in zip(offsets[:-1], offsets[1:]):
        for t in range(b, e):
            for k in range(length):
                if b <= t + start + k < e:
                    col[t, k * width:(k + 1) * width] = x[t + start + k]
    return col @ filt


def _sequence_pool(x, offsets, a):
    """Paddle's sequence_pool: one row per sequence; pad_value for an empty one."""
    kind = a.get("pooltype", "AVERAGE")
    out = np.full((len(offsets) - 1,) + x.shape[1:], a.get("pad_value", 0.0), x.dtype)
    for s, (b, e) in enumerate(zip(offsets[:-1], offsets[1:])):
        if b == e:
            continue
        rows = x[b:e]
        out[s] = {"SUM": lambda: rows.sum(0), "AVERAGE": lambda: rows.sum(0) / (e - b),
                  "SQRT": lambda: rows.sum(0) / np.sqrt(np.float32(e - b)), "MAX": lambda: rows.max(0),
                  "FIRST": lambda: rows[0], "LAST": lambda: rows[-1]}[kind]()
    return out


def _run_op(op, env, a, lods):
    t = op.type
    ins = {v.parameter: [env[n] for n in v.arguments] for v in op.inputs}
    X = ins.get("X", [None])[0] if ins.get("X") else None
    if t in ("sequence_conv", "sequence_pool"):
        offsets = lods[[v.arguments[0] for v in op.inputs if v.parameter == "X"][0]]
        if t == "sequence_conv":
            return {"Out": _sequence_conv(X, ins["Filter"][0], offsets, a)}
        return {"Out": _sequence_pool(X, offsets, a)}
    if t == "sum":
        return {"Out": sum(ins["X"][1:], ins["X"][0].copy())}
    if t == "mul":
        x, y = X, ins["Y"][0]
        xn, yn = a.get("x_num_col_dims", 1), a.get("y_num_col_dims", 1)
        out = _flatten(x, xn) @ _flatten(y, yn)
        return {"Out": out.reshape(x.shape[:xn] + y.shape[yn:])}
    if t == "matmul":
        x, y = X, ins["Y"][0]
        if a.get("transpose_X"):
            x = np.swapaxes(x, -1, -2)
        if a.get("transpose_Y"):
            y = np.swapaxes(y, -1, -2)
        return {"Out": (x @ y) * np.float32(a.get("alpha", 1.0))}
    if t.startswith("elementwise_"):
        y = _broadcast_y(X, ins["Y"][0], a.get("axis", -1))
        f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[t[len("elementwise_"):]]
        return {"Out": f(X, y).astype(X.dtype)}
    if t == "scale":
        s, b = np.float32(a.get("scale", 1.0)), np.float32(a.get("bias", 0.0))
        return {"Out": (X * s + b if a.get("bias_after_scale", True) else (X + b) * s).astype(X.dtype)}
    if t == "relu":
        return {"Out": np.maximum(X, 0)}
    if t == "leaky_relu":
        return {"Out": np.where(X > 0, X, X * np.float32(a.get("alpha", 0.02)))}
    if t == "tanh":
        return {"Out": np.tanh(X)}
    if t == "sigmoid":
        return {"Out": 1 / (1 + np.exp(-X))}
    if t == "hard_sigmoid":
        return {"Out": np.clip(X * np.float32(a.get("slope", 0.2)) + np.float32(a.get("offset", 0.5)), 0, 1)}
    if t == "hard_swish":
        th, sc, off = a.get("threshold", 6.0), a.get("scale", 6.0), a.get("offset", 3.0)
        return {"Out": (X * np.clip(X + np.float32(off), 0, np.float32(th)) / np.float32(sc)).astype(X.dtype)}
    if t == "softmax":
        e = np.exp(X - X.max(axis=a.get("axis", -1), keepdims=True))
        return {"Out": e / e.sum(axis=a.get("axis", -1), keepdims=True)}
    if t == "dropout":
        keep = 1 - a.get("dropout_prob", 0.5)
        impl = a.get("dropout_implementation", "downgrade_in_infer")
        return {"Out": X if impl == "upscale_in_train" else (X * np.float32(keep)).astype(X.dtype)}
    if t == "batch_norm":
        shape = (1, -1) + (1,) * (X.ndim - 2)
        mean, var = ins["Mean"][0].reshape(shape), ins["Variance"][0].reshape(shape)
        scale, bias = ins["Scale"][0].reshape(shape), ins["Bias"][0].reshape(shape)
        eps = np.float32(a.get("epsilon", 1e-5))
        return {"Y": ((X - mean) / np.sqrt(var + eps) * scale + bias).astype(X.dtype)}
    if t in ("conv2d", "depthwise_conv2d"):
        return {"Output": _conv2d(ins["Input"][0], ins["Filter"][0], a)}
    if t == "pool2d":
        return {"Out": _pool2d(X, a)}
    if t == "flatten2":
        axis = a.get("axis", 1)
        return {"Out": X.reshape(int(np.prod(X.shape[:axis])), -1)}
    if t == "reshape2":
        # Paddle's order: ShapeTensor (one 1-element tensor per dim), then Shape, then the attribute.
        if ins.get("ShapeTensor"):
            shape = [int(v.reshape(-1)[0]) for v in ins["ShapeTensor"]]
        elif ins.get("Shape"):
            shape = [int(d) for d in ins["Shape"][0].reshape(-1)]
        else:
            shape = [X.shape[i] if d == 0 else d for i, d in enumerate(a["shape"])]
        return {"Out": X.reshape(shape)}
    if t == "transpose2":
        return {"Out": np.transpose(X, a["axis"])}
    if t == "concat":
        return {"Out": np.concatenate(ins["X"], axis=a.get("axis", 0))}
    if t == "shape":
        return {"Out": np.array(ins["Input"][0].shape, np.int32)}
    if t == "slice":
        x = ins["Input"][0]
        index = [slice(None)] * x.ndim
        for ax, s, e in zip(a["axes"], a["starts"], a["ends"]):
            index[ax] = slice(s, e)
        out = x[tuple(index)]
        if a.get("decrease_axis"):
            out = out.reshape([d for i, d in enumerate(out.shape) if i not in a["decrease_axis"]] or [1])
        return {"Out": out}
    if t == "fill_constant":
        return {"Out": np.full(a["shape"], a.get("value", 0.0), _DTYPES[a.get("dtype", 5)])}
    if t == "cast":
        return {"Out": X.astype(_DTYPES[a["out_dtype"]])}
    if t in ("lookup_table", "lookup_table_v2"):
        w, ids = ins["W"][0], ins["Ids"][0]
        flat = ids.reshape(-1)
        out = w[flat]
        pad = a.get("padding_idx", -1)  # -1: none
        if pad != -1:
            out[flat == pad] = 0
        shape = ids.shape + (w.shape[1],) if t == "lookup_table_v2" else ids.shape[:-1] + (w.shape[1],)
        return {"Out": out.reshape(shape)}
    if t == "nearest_interp_v2":
        assert not a.get("align_corners", False) and not ins.get("OutSize") and not ins.get("SizeTensor")
        scale = a["scale"] if not ins.get("Scale") else list(ins["Scale"][0].reshape(-1))
        out_h, out_w = (int(X.shape[2] * scale[0]), int(X.shape[3] * scale[1])) if a.get("out_h", -1) <= 0 \
            else (a["out_h"], a["out_w"])
        rows = np.floor(np.arange(out_h) * np.float32(1.0 / scale[0] if scale[0] > 0 else X.shape[2] / out_h))
        cols = np.floor(np.arange(out_w) * np.float32(1.0 / scale[1] if scale[1] > 0 else X.shape[3] / out_w))
        return {"Out": X[:, :, rows.astype(int)][:, :, :, cols.astype(int)]}
    if t == "yolo_box":
        return _yolo_box(X, ins["ImgSize"][0], a)
    if t in ("multiclass_nms", "multiclass_nms2", "multiclass_nms3"):
        rois = ins["RoisNum"][0] if ins.get("RoisNum") else None
        return _multiclass_nms(ins["BBoxes"][0], ins["Scores"][0], a, rois)
    raise NotImplementedError("the reference has no op '%s'" % t)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _yolo_box(x, img_size, a):
    """YOLOv3 decoding (Paddle's yolo_box), vectorized over anchors and cells."""
    anchors = np.array(a["anchors"], np.float32).reshape(-1, 2)
    classes, ratio = a["class_num"], a.get("downsample_ratio", 32)
    s = np.float32(a.get("scale_x_y", 1.0))
    bias = np.float32(-0.5 * (s - 1.0))
    n, _, h, w = x.shape
    iou = None
    if a.get("iou_aware", False):  # an IoU channel per anchor in front
        iou, x = x[:, :len(anchors)], x[:, len(anchors):]
    p = x.reshape(n, len(anchors), 5 + classes, h, w)
    conf = _sigmoid(p[:, :, 4])
    if iou is not None:
        f = x.dtype.type(np.float32(a.get("iou_aware_factor", 0.5)))  # a FLOAT attribute
        conf = conf ** (1 - f) * _sigmoid(iou) ** f
    img_h = img_size[:, 0].astype(x.dtype).reshape(n, 1, 1, 1)
    img_w = img_size[:, 1].astype(x.dtype).reshape(n, 1, 1, 1)
    cols = np.arange(w, dtype=x.dtype).reshape(1, 1, 1, w)
    rows = np.arange(h, dtype=x.dtype).reshape(1, 1, h, 1)
    cx = (cols + _sigmoid(p[:, :, 0]) * s + bias) * img_w / x.dtype.type(w)
    cy = (rows + _sigmoid(p[:, :, 1]) * s + bias) * img_h / x.dtype.type(h)
    bw = np.exp(p[:, :, 2]) * anchors[:, 0].reshape(1, -1, 1, 1) * img_w / x.dtype.type(ratio * w)
    bh = np.exp(p[:, :, 3]) * anchors[:, 1].reshape(1, -1, 1, 1) * img_h / x.dtype.type(ratio * h)
    boxes = np.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], axis=-1)
    if a.get("clip_bbox", True):
        boxes[..., 0] = np.maximum(boxes[..., 0], 0)
        boxes[..., 1] = np.maximum(boxes[..., 1], 0)
        boxes[..., 2] = np.minimum(boxes[..., 2], img_w - 1)
        boxes[..., 3] = np.minimum(boxes[..., 3], img_h - 1)
    scores = conf[:, :, None] * _sigmoid(p[:, :, 5:])  # [n, anchors, classes, h, w]
    keep = conf >= np.float32(a.get("conf_thresh", 0.01))
    boxes = np.where(keep[..., None], boxes, 0).reshape(n, -1, 4)
    scores = np.where(keep[:, :, None], scores, 0).transpose(0, 1, 3, 4, 2).reshape(n, -1, classes)
    return {"Boxes": boxes.astype(x.dtype), "Scores": scores.astype(x.dtype)}


def _iou(box, others, normalized):
    extra = 0 if normalized else 1
    iw = np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0]) + extra
    ih = np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1]) + extra
    disjoint = (others[:, 0] > box[2]) | (others[:, 2] < box[0]) | (others[:, 1] > box[3]) | (others[:, 3] < box[1])

    def area(b):
        ok = (b[..., 2] >= b[..., 0]) & (b[..., 3] >= b[..., 1])
        return np.where(ok, (b[..., 2] - b[..., 0] + extra) * (b[..., 3] - b[..., 1] + extra), 0)
    inter = iw * ih
    return np.where(disjoint, 0, inter / (area(box) + area(others) - inter))


def _nms_image(boxes_of, scores, a):
    """One image's kept detections [(label, score, box)], in Paddle's output order. scores:
    [C, M]; boxes_of(c): that class's [M, 4] boxes."""
    kept = []
    for c in range(scores.shape[0]):
        if c == a.get("background_label", 0):
            continue
        s, boxes = scores[c], boxes_of(c)
        order = [m for m in np.argsort(-s, kind="stable") if s[m] > s.dtype.type(a["score_threshold"])]
        if a.get("nms_top_k", -1) > -1:
            order = order[:a["nms_top_k"]]
        chosen, threshold = [], s.dtype.type(a.get("nms_threshold", 0.3))
        for m in order:
            if not chosen or np.all(_iou(boxes[m], boxes[chosen], a.get("normalized", True)) <= threshold):
                chosen.append(m)
                if a.get("nms_eta", 1.0) < 1 and threshold > 0.5:
                    threshold *= s.dtype.type(a["nms_eta"])
        kept += [(c, s[m], m) for m in chosen]
    top = a.get("keep_top_k", -1)
    if top > -1 and len(kept) > top:
        best = sorted(range(len(kept)), key=lambda k: -kept[k][1])[:top]  # sorted() is stable
        best = [kept[k] for k in best]
        kept = [r for c in sorted(set(r[0] for r in best)) for r in best if r[0] == c]
    return kept


def _multiclass_nms(bboxes, scores, a, rois_num=None):
    """Per-class greedy NMS (Paddle's multiclass_nms): Scores [N, C, M] with BBoxes [N, M, 4],
    or Scores [M, C] with BBoxes [M, C, 4] split into images by rois_num. Out rows
    (label, score, box) per image by label; Index; NmsRoisNum."""
    rows, index, counts = [], [], []
    if scores.ndim == 3:
        images = [(scores[i], lambda c, i=i: bboxes[i], i * scores.shape[2], 1, 0) for i in range(scores.shape[0])]
    else:
        starts = np.concatenate([[0], np.cumsum(rois_num)]).astype(int)
        classes = scores.shape[1]
        images = [(scores[b:e].T, lambda c, b=b, e=e: bboxes[b:e, c], b * classes, classes, 1)
                  for b, e in zip(starts[:-1], starts[1:])]
    for s, boxes_of, offset, box_step, label_step in images:
        kept = _nms_image(boxes_of, s, a)
        if scores.ndim == 2:  # this layout lists each class's boxes in box order
            kept = sorted(kept, key=lambda r: (r[0], r[2]))
        rows += [[c, sc] + list(boxes_of(c)[m]) for c, sc, m in kept]
        index += [offset + m * box_step + c * label_step for c, _, m in kept]
        counts.append(len(kept))
    out = np.array(rows, scores.dtype).reshape(-1, 6)
    return {"Out": out, "Index": np.array(index, np.int32).reshape(-1, 1), "NmsRoisNum": np.array(counts, np.int32)}


def run_model(path, feeds, feed_lods=None):
    """Runs the model at ``path`` on ``feeds`` ({variable: array}, with ``feed_lods``
    {variable: offsets} for those that pack sequences); returns the fetched variables as
    {name: array}, in fetch col order."""
    program, params = load_model(path)
    env = dict(params)
    lods = dict(feed_lods or {})
    fetched = {}
    for op in program.blocks[0].ops:
        a = _attrs(op)
        if op.type == "feed":
            name = op.outputs[0].arguments[0]
            env[name] = feeds[name]
            continue
        if op.type == "fetch":
            fetched[a["col"]] = op.inputs[0].arguments[0]
            continue
        with torch.no_grad():
            outs = _run_op(op, env, a, lods)
        for v in op.outputs:
            if v.parameter in outs and v.arguments:
                env[v.arguments[0]] = outs[v.parameter]
        if op.type in _SHARES_LOD:
            source = [v.arguments[0] for v in op.inputs if v.parameter == _SHARES_LOD[op.type]][0]
            if source in lods:
                lods[op.outputs[0].arguments[0]] = lods[source]
    return {fetched[c]: env[fetched[c]] for c in sorted(fetched)}


def main(argv):
    model, out = argv[1], argv[2]
    feeds, lods = {}, {}
    for spec in argv[3:]:
        name, value = spec.split("=", 1)
        if name.endswith("@lod"):
            lods[name[:-len("@lod")]] = [int(o) for o in value.split(",")]
        else:
            feeds[name] = np.load(value)
    fetched = run_model(model, feeds, lods)
    arrays = {"f%d" % k: v for k, v in enumerate(fetched.values())}
    np.savez(out, __order__=np.array(list(fetched)), **arrays)


if __name__ == "__main__":
    import sys
    main(sys.argv)
