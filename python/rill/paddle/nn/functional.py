"""paddle.nn.functional: activations, dropout, padding and softmax as Paddle 2.x's static
graph builds them: each appends its op (rill/paddle/_op.py) with Paddle 2.x's argument
names and defaults, which differ from Fluid's layers of the same ops (leaky_relu's
negative_slope is the op's alpha, hardtanh is brelu, ...)."""
from rill.fluid import layers
from rill.fluid.framework import Variable
from rill.paddle import _op
from rill.paddle.tensor import creation, logic, manipulation, math, random
from rill.paddle.tensor.inplace import inplace
from rill.paddle.nn.conv import conv2d, conv2d_transpose  # noqa: F401
from rill.paddle.nn.interpolate import interpolate  # noqa: F401
from rill.paddle.nn.norm import local_response_norm  # noqa: F401

__all__ = ["relu", "relu6", "elu", "gelu", "hardshrink", "hardtanh", "hardsigmoid", "hardswish", "leaky_relu",
           "log_sigmoid", "maxout", "prelu", "selu", "silu", "sigmoid", "softplus", "softshrink", "softsign",
           "swish", "tanh", "tanhshrink", "thresholded_relu", "softmax", "log_softmax", "dropout", "dropout2d",
           "dropout3d", "alpha_dropout", "pad", "relu_", "elu_", "softmax_", "conv2d", "conv2d_transpose", "interpolate", "local_response_norm", "embedding"]


def _activation(op_type, x, name, attrs=None, fn=None, dtypes=_op.FLOATS):
    _op.check_variable(x, "x", fn or op_type, dtypes)
    return _op.append(op_type, {"X": x}, attrs, shape=x.shape, name=name, layer=fn or op_type)


def relu(x, name=None):
    return _activation("relu", x, name)


def relu6(x, name=None):
    return _activation("relu6", x, name, {"threshold": 6.0})


def elu(x, alpha=1.0, name=None):
    return _activation("elu", x, name, {"alpha": float(alpha)})


def gelu(x, approximate=False, name=None):
    return _activation("gelu", x, name, {"approximate": bool(approximate)})


def hardshrink(x, threshold=0.5, name=None):
    return _activation("hard_shrink", x, name, {"threshold": float(threshold)}, "hardshrink")


def hardtanh(x, min=-1.0, max=1.0, name=None):
    return _activation("brelu", x, name, {"t_min": float(min), "t_max": float(max)}, "hardtanh")


def hardsigmoid(x, slope=0.1666667, offset=0.5, name=None):
    return _activation("hard_sigmoid", x, name, {"slope": float(slope), "offset": float(offset)}, "hardsigmoid")


def hardswish(x, name=None):
    return _activation("hard_swish", x, name, None, "hardswish")


def leaky_relu(x, negative_slope=0.01, name=None):
    return _activation("leaky_relu", x, name, {"alpha": float(negative_slope)})


def log_sigmoid(x, name=None):
    return _activation("logsigmoid", x, name, None, "log_sigmoid")


def selu(x, scale=1.0507009873554804934193349852946, alpha=1.6732632423543772848170429916717, name=None):
    if scale <= 1.0:
        raise ValueError("The scale must be greater than 1.0. Received: {}.".format(scale))
    if alpha < 0:
        raise ValueError("The alpha must be no less than zero. Received: {}.".format(alpha))
    return _activation("selu", x, name, {"scale": float(scale), "alpha": float(alpha)})


def silu(x, name=None):
    return _activation("silu", x, name)


def sigmoid(x, name=None):
    return _activation("sigmoid", x, name)


def softplus(x, beta=1, threshold=20, name=None):
    return _activation("softplus", x, name, {"beta": float(beta), "threshold": float(threshold)})


def softshrink(x, threshold=0.5, name=None):
    if threshold < 0:
        raise ValueError("The threshold must be no less than zero. Received: {}.".format(threshold))
    return _activation("softshrink", x, name, {"lambda": float(threshold)})


def softsign(x, name=None):
    return _activation("softsign", x, name)


def swish(x, name=None):
    return _activation("swish", x, name, {"beta": 1.0})


def tanh(x, name=None):
    return _activation("tanh", x, name)


def tanhshrink(x, name=None):
    return _activation("tanh_shrink", x, name, None, "tanhshrink")


def thresholded_relu(x, threshold=1.0, name=None):
    return _activation("thresholded_relu", x, name, {"threshold": float(threshold)})


def maxout(x, groups, axis=1, name=None):
    if axis not in (1, -1, 3):
        raise ValueError("Attr(axis) should be 1 when data format is NCHW, -1 or 3 when data format is NHWC. "
                         "Received Attr(axis): %s." % str(axis))
    return _activation("maxout", x, name, {"groups": groups, "axis": 3 if axis == -1 else axis})


def prelu(x, weight, name=None):
    """max(0, x) + weight * min(0, x): weight [1] for all of x, or [C] one per channel (dim 1)."""
    _op.check_variable(x, "x", "prelu", _op.FLOATS)
    _op.check_variable(weight, "weight", "prelu", _op.FLOATS)
    if len(weight.shape) != 1:
        raise AssertionError("The dim count of weight shape should be 1 in prelu().")
    mode = "all"
    if weight.shape[0] > 1:
        if len(x.shape) <= 1:
            raise AssertionError("The dim count of x should be equal or larger than 2 in prelu() when weight shape "
                                 "is not [1].")
        if weight.shape[0] != x.shape[1]:
            raise AssertionError("The weight size should be equal to x input channel in prelu() when weight shape "
                                 "is not [1].")
        mode = "channel"
    return _op.append("prelu", {"X": x, "Alpha": weight}, {"mode": mode}, shape=x.shape, name=name)


def _softmax(op_type, x, axis, dtype, name):
    if dtype is None:
        _op.check_variable(x, "x", op_type, _op.FLOATS)
    else:
        _op.check_variable(x, "x", op_type)
        if _op.as_dtype(dtype) not in (_op.VarType.FP32, _op.VarType.FP64):
            raise TypeError("If dtype is not None, it only support float32 or float64.")
        x = layers.cast(x, dtype)
    return _op.append(op_type, {"X": x}, {"axis": int(axis)}, shape=x.shape, name=name)


def softmax(x, axis=-1, dtype=None, name=None):
    return _softmax("softmax", x, axis, dtype, name)


def log_softmax(x, axis=-1, dtype=None, name=None):
    return _softmax("log_softmax", x, axis, dtype, name)


_MODES = ("upscale_in_train", "downscale_in_infer")


def dropout(x, p=0.5, axis=None, training=True, mode="upscale_in_train", name=None):
    """x with each element (or, with `axis`, each slice along those axes) zeroed with
    probability p; upscale_in_train scales the rest by 1/(1-p) in training,
    downscale_in_infer scales by 1-p at inference."""
    if not isinstance(p, (float, int)) or isinstance(p, bool):
        raise TypeError("p argument should be a number")
    if not 0 <= p <= 1:
        raise ValueError("p argument should between 0 and 1")
    if mode not in _MODES:
        raise ValueError("mode argument should be 'downscale_in_infer' or 'upscale_in_train'")
    if axis is not None and not isinstance(axis, (int, list, tuple)):
        raise TypeError("datatype of axis argument should be int or list")
    _op.check_variable(x, "x", "dropout", _op.FLOATS)
    if axis is None:
        attrs = {"dropout_prob": float(p), "is_test": not training, "fix_seed": False, "seed": 0,
                 "dropout_implementation": "downgrade_in_infer" if mode == "downscale_in_infer" else mode}
        return _op.append("dropout", {"X": x}, attrs, shape=x.shape, name=name, outputs=("Out", "Mask"),
                          output_dtypes={"Mask": "uint8"})[0]
    if not training:
        return math.scale(x, 1.0 - p) if mode == "downscale_in_infer" else x
    axes = [axis] if isinstance(axis, int) else list(axis)
    if len(axes) > len(x.shape):
        raise ValueError("length of axis should not be greater than dimensions of x:{}, but get length of axis: {}"
                         .format(len(x.shape), len(axes)))
    if min(axes) < 0 or max(axes) > len(x.shape) - 1:
        raise ValueError("axis value should be greater than or equal to 0 and less than dimensions of x:{}, but get "
                         "axis value:{} ".format(len(x.shape), max(axes)))
    mask_shape = [x.shape[i] if i in axes else 1 for i in range(len(x.shape))]
    keep = logic.greater_equal(random.uniform(mask_shape, "float32", 0.0, 1.0), creation.full([1], p, "float32"))
    scaled = math.scale(x, 1.0 / (1.0 - p)) if mode == "upscale_in_train" and p < 1 else x
    if p == 1:
        scaled = math.scale(x, 0.0)
    return math.multiply(scaled, manipulation.cast(keep, x.dtype))


def _channel_dropout(x, p, training, data_format, rank, formats, fn):
    if len(x.shape) != rank:
        raise ValueError("dimensions of x should be %d, but received dimensions of x: %d" % (rank, len(x.shape)))
    if data_format not in formats:
        raise ValueError("Attr(data_format) should be '%s' or '%s'. Received Attr(data_format): %s." %
                         (formats[0], formats[1], data_format))
    return dropout(x, p=p, axis=[0, 1] if data_format == formats[0] else [0, rank - 1], training=training,
                   mode="upscale_in_train")


def dropout2d(x, p=0.5, training=True, data_format="NCHW", name=None):
    return _channel_dropout(x, p, training, data_format, 4, ("NCHW", "NHWC"), "dropout2d")


def dropout3d(x, p=0.5, training=True, data_format="NCDHW", name=None):
    return _channel_dropout(x, p, training, data_format, 5, ("NCDHW", "NDHWC"), "dropout3d")


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def alpha_dropout(x, p=0.5, training=True, name=None):
    """Dropout that keeps a SELU network's mean and variance: dropped elements take SELU's
    negative saturation value, then all are scaled and shifted back."""
    if not isinstance(p, (float, int)) or isinstance(p, bool):
        raise TypeError("p argument should be a float or int")
    if not 0 <= p <= 1:
        raise ValueError("p argument should between 0 and 1")
    _op.check_variable(x, "x", "alpha_dropout", ("float32", "float64"))
    if not training:
        return x
    if p == 1:
        return math.scale(x, 0.0)
    alpha_p = -_SELU_ALPHA * _SELU_SCALE
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    keep = manipulation.cast(logic.greater_equal(random.uniform(x.shape, "float32", 0.0, 1.0),
                                                 creation.full([1], p, "float32")), x.dtype)
    drop = math.subtract(creation.full(x.shape, 1.0, x.dtype), keep)
    y = math.add(math.multiply(x, keep), math.scale(drop, alpha_p))
    return math.add(math.scale(y, a), creation.full([1], b, x.dtype))


_PAD_MODES = ("reflect", "replicate", "constant", "circular")
_FORMATS = {3: ("NCL", "NLC"), 4: ("NCHW", "NHWC"), 5: ("NCDHW", "NDHWC")}


def pad(x, pad, mode="constant", value=0.0, data_format="NCHW", name=None):
    """x padded: with mode "constant" and 2 * rank amounts, every dim (the pad op, Fluid's
    order: before and after of dim 0 first); otherwise the spatial dims of a 3-, 4- or 5-D x
    (pad3d, amounts from the last spatial dim: left, right, top, bottom, front, back), pad a
    list of ints or a 1-D int32 tensor."""
    if mode not in _PAD_MODES:
        raise AssertionError("mode should be one of constant, reflect, replicate, circular, but got %s." % mode)
    rank = len(x.shape)
    if mode == "constant" and isinstance(pad, (list, tuple)) and len(pad) == rank * 2:
        return layers.pad(x, list(pad), pad_value=value, name=name)
    if rank not in _FORMATS:
        raise AssertionError("input tesor dimension must be in [3, 4, 5] but got %d" % rank)
    if data_format not in _FORMATS[rank]:
        raise AssertionError("input tensor dimension is %d, it's data format should be in %s but got %s" %
                             (rank, list(_FORMATS[rank]), data_format))
    channel_first = data_format == _FORMATS[rank][0]
    # As 5-D NCDHW/NDHWC: the missing spatial dims inserted as 1s and given no padding.
    inserted = {3: [3, 4] if channel_first else [2, 3], 4: [2] if channel_first else [1], 5: []}[rank]
    inputs = {}
    attrs = {"mode": mode, "value": float(value), "data_format": "NCDHW" if channel_first else "NDHWC"}
    if isinstance(pad, Variable):
        zeros = creation.zeros([4 if rank == 3 else 2], "int32")
        inputs["Paddings"] = pad if rank == 5 else layers.concat([zeros, pad] if rank == 3 else [pad, zeros])
        attrs["paddings"] = []
    else:
        pad = list(pad)
        attrs["paddings"] = [0, 0, 0, 0] + pad if rank == 3 else pad + [0, 0] if rank == 4 else pad
    if inserted:
        x = manipulation.unsqueeze(x, inserted)
    inputs["X"] = x
    shape = None
    if attrs["paddings"]:
        shape = list(x.shape)
        first = 2 if channel_first else 1  # D, then H, then W; paddings list W's first
        for k in range(3):
            before, after = attrs["paddings"][2 * (2 - k):2 * (2 - k) + 2]
            if shape[first + k] >= 0:
                shape[first + k] += before + after
    out = _op.append("pad3d", inputs, attrs, shape=shape, name=name, layer="pad")
    return manipulation.squeeze(out, inserted) if inserted else out


def embedding(x, weight, padding_idx=None, sparse=False, name=None):
    """The rows of `weight` at the int ids of x (padding_idx's row reads as zeros; sparse: the
    gradient is SelectedRows)."""
    _op.check_variable(x, "x", "embedding", ("int32", "int64"))
    rows = weight.shape[0]
    if padding_idx is not None and not -rows <= padding_idx < rows:
        raise ValueError("padding_idx must be within [-{}, {})".format(rows, rows))
    return _op.append("lookup_table_v2", {"Ids": x, "W": weight},
                      {"padding_idx": -1 if padding_idx is None else padding_idx % rows, "is_sparse": bool(sparse)},
                      dtype=weight.dtype, shape=list(x.shape) + [weight.shape[1]], name=name, layer="embedding")


relu_ = inplace(relu)
elu_ = inplace(elu)
softmax_ = inplace(softmax)
