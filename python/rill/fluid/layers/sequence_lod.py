"""fluid.layers' sequence layers: ops on LoD tensors (variable-length sequences packed into
one tensor, a data layer's lod_level > 0), as Fluid writes them. Each output has its input's
rows' width; its row count, set by the LoD fed, is unknown (-1) until run."""
from rill.fluid.framework import Variable
from rill.fluid.layer_helper import LayerHelper
from rill.fluid.layers.checks import check_type, check_variable_and_dtype

__all__ = [
    "sequence_conv", "sequence_pool", "sequence_first_step", "sequence_last_step", "sequence_softmax",
    "sequence_reverse", "sequence_expand", "sequence_expand_as", "sequence_pad", "sequence_unpad", "sequence_mask",
    "sequence_concat", "sequence_reshape", "sequence_slice", "sequence_enumerate", "sequence_scatter", "lod_reset",
    "lod_append", "im2sequence", "row_conv",
]


def _rows_like(helper, x, dtype=None, lod_level=None):
    """An output of `x`'s row shape and an unknown row count."""
    out = helper.create_tmp_variable(dtype or x.dtype)
    out._shape = [-1] + [int(d) for d in x.shape[1:]]
    out._lod_level = x.lod_level if lod_level is None else lod_level
    return out


def sequence_conv(input, num_filters, filter_size=3, filter_stride=1, padding=True, padding_start=None,
                  bias_attr=None, param_attr=None, act=None, name=None):
    """A convolution over each sequence's rows: a [filter_size * width, num_filters] filter
    over filter_size consecutive rows (from padding_start, default -(filter_size // 2)),
    rows outside the sequence zero; then the bias and `act`."""
    check_variable_and_dtype(input, "input", ["float32", "float64"], "sequence_conv")
    helper = LayerHelper("sequence_conv", **locals())
    dtype = helper.input_dtype()
    w = helper.create_parameter(attr=helper.param_attr, shape=[filter_size * input.shape[1], num_filters],
                                dtype=dtype)
    pre_bias = helper.create_tmp_variable(dtype)
    pre_bias._shape = [-1, num_filters]
    pre_bias._lod_level = input.lod_level
    if padding_start is None:
        padding_start = -int(filter_size // 2)
    helper.append_op(type="sequence_conv", inputs={"X": [input], "Filter": [w]}, outputs={"Out": pre_bias},
                     attrs={"contextStride": filter_stride, "contextStart": padding_start,
                            "contextLength": filter_size})
    out = helper.append_activation(helper.append_bias_op(pre_bias))
    out._shape = [-1, num_filters]
    out._lod_level = input.lod_level
    return out


def sequence_pool(input, pool_type, is_test=False, pad_value=0.0):
    """One row per sequence: its rows' "sum", "average", "sqrt" (sum over the root of the
    length), "max", "first" or "last"; pad_value for an empty sequence."""
    check_variable_and_dtype(input, "input", ["float32", "float64"], "sequence_pool")
    if pool_type.upper() not in ("SUM", "AVERAGE", "SQRT", "MAX", "FIRST", "LAST"):
        raise ValueError("sequence_pool: pool_type must be sum, average, sqrt, max, first or last, got %r"
                         % pool_type)
    helper = LayerHelper("sequence_pool", **locals())
    out = _rows_like(helper, input, lod_level=max(0, input.lod_level - 1))
    index = helper.create_tmp_variable("int32", stop_gradient=True)
    helper.append_op(type="sequence_pool", inputs={"X": input}, outputs={"Out": out, "MaxIndex": index},
                     attrs={"pooltype": pool_type.upper(), "is_test": is_test, "pad_value": pad_value})
    return out


def sequence_first_step(input):
    return sequence_pool(input, "first")


def sequence_last_step(input):
    return sequence_pool(input, "last")


def sequence_softmax(input, use_cudnn=False, name=None):
    """The softmax of each sequence's values ([R] or [R, 1])."""
    check_variable_and_dtype(input, "input", ["float32", "float64"], "sequence_softmax")
    helper = LayerHelper("sequence_softmax", **locals())
    out = _rows_like(helper, input)
    helper.append_op(type="sequence_softmax", inputs={"X": input}, outputs={"Out": out},
                     attrs={"use_cudnn": use_cudnn})
    return out


def sequence_reverse(x, name=None):
    """Each sequence's rows in reverse order."""
    check_variable_and_dtype(x, "x", ["float32", "float64", "int8", "int32", "int64"], "sequence_reverse")
    helper = LayerHelper("sequence_reverse", **locals())
    out = _rows_like(helper, x)
    helper.append_op(type="sequence_reverse", inputs={"X": x}, outputs={"Y": out})
    return out


def sequence_expand(x, y, ref_level=-1, name=None):
    """x's sequences (or rows) each repeated as many times as y's sequence at ref_level holds
    entries."""
    check_variable_and_dtype(x, "x", ["float32", "float64", "int32", "int64"], "sequence_expand")
    check_type(y, "y", type(x), "sequence_expand")
    helper = LayerHelper("sequence_expand", **locals())
    out = _rows_like(helper, x, lod_level=max(1, x.lod_level))
    helper.append_op(type="sequence_expand", inputs={"X": x, "Y": y}, outputs={"Out": out},
                     attrs={"ref_level": ref_level})
    return out


def sequence_expand_as(x, y, name=None):
    """Row i of x repeated as many times as y's sequence i has rows; the result has y's LoD."""
    check_variable_and_dtype(x, "x", ["float32", "float64", "int32", "int64"], "sequence_expand_as")
    check_type(y, "y", type(x), "sequence_expand_as")
    helper = LayerHelper("sequence_expand_as", **locals())
    out = _rows_like(helper, x, lod_level=1)
    helper.append_op(type="sequence_expand_as", inputs={"X": x, "Y": y}, outputs={"Out": out})
    return out


def sequence_pad(x, pad_value, maxlen=None, name=None):
    """(Out, Length): x's sequences as a padded batch [S, maxlen, ...] (maxlen None: the
    longest), filled with pad_value (a Variable of one value or one row); their lengths."""
    check_variable_and_dtype(x, "x", ["float32", "float64", "int32", "int64"], "sequence_pad")
    check_variable_and_dtype(pad_value, "pad_value", ["float32", "float64", "int32", "int64"], "sequence_pad")
    helper = LayerHelper("sequence_pad", **locals())
    out = helper.create_tmp_variable(x.dtype)
    out._shape = [-1, -1 if maxlen is None else int(maxlen)] + [int(d) for d in x.shape[1:]]
    length = helper.create_tmp_variable("int64", stop_gradient=True)
    length._shape = [-1]
    helper.append_op(type="sequence_pad", inputs={"X": x, "PadValue": pad_value},
                     outputs={"Out": out, "Length": length},
                     attrs={"padded_length": -1 if maxlen is None else int(maxlen)})
    return out, length


def sequence_unpad(x, length, name=None):
    """The first length[s] rows of each x[s], packed into a LoD tensor."""
    check_variable_and_dtype(x, "x", ["float32", "float64", "int32", "int64"], "sequence_unpad")
    check_variable_and_dtype(length, "length", ["int64"], "sequence_unpad")
    helper = LayerHelper("sequence_unpad", **locals())
    out = helper.create_tmp_variable(x.dtype)
    out._shape = [-1] + ([int(d) for d in x.shape[2:]] or [1])
    out._lod_level = 1
    helper.append_op(type="sequence_unpad", inputs={"X": x, "Length": length}, outputs={"Out": out})
    return out


def sequence_mask(x, maxlen=None, dtype="int64", name=None):
    """y[..., j] = j < x[...]: lengths into masks of maxlen entries (None: the longest; a
    Variable: given at run time)."""
    check_variable_and_dtype(x, "x", ["int32", "int64"], "sequence_mask")
    helper = LayerHelper("sequence_mask", **locals())
    out = helper.create_tmp_variable(dtype, stop_gradient=True)
    inputs, attrs = {"X": [x]}, {"out_dtype": out.dtype}
    if isinstance(maxlen, Variable):
        inputs["MaxLenTensor"] = [maxlen]
        attrs["maxlen"] = -1
    else:
        attrs["maxlen"] = -1 if maxlen is None else int(maxlen)
    out._shape = list(x.shape) + [attrs["maxlen"] if attrs["maxlen"] >= 0 else -1]
    helper.append_op(type="sequence_mask", inputs=inputs, outputs={"Y": out}, attrs=attrs)
    return out


def sequence_concat(input, name=None):
    """Sequence s of each of `input` (a list of LoD tensors of as many sequences) after one
    another."""
    check_type(input, "input", list, "sequence_concat")
    for i, x in enumerate(input):
        check_variable_and_dtype(x, "input[%d]" % i, ["float32", "float64", "int32", "int64"], "sequence_concat")
    helper = LayerHelper("sequence_concat", **locals())
    out = _rows_like(helper, input[0])
    helper.append_op(type="sequence_concat", inputs={"X": input}, outputs={"Out": [out]})
    return out


def sequence_reshape(input, new_dim):
    """input's values in rows of new_dim, sequence by sequence."""
    check_variable_and_dtype(input, "input", ["float32", "float64", "int32", "int64"], "sequence_reshape")
    helper = LayerHelper("sequence_reshape", **locals())
    out = helper.create_tmp_variable(input.dtype)
    out._shape = [-1, int(new_dim)]
    out._lod_level = 1
    helper.append_op(type="sequence_reshape", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"new_dim": new_dim})
    return out


def sequence_slice(input, offset, length, name=None):
    """Rows offset[s] .. offset[s] + length[s] - 1 of each sequence s (int64 [S, 1] each)."""
    check_variable_and_dtype(input, "input", ["float32", "float64", "int32", "int64"], "sequence_slice")
    helper = LayerHelper("sequence_slice", **locals())
    out = _rows_like(helper, input)
    offset.stop_gradient = True
    length.stop_gradient = True
    helper.append_op(type="sequence_slice", inputs={"X": input, "Offset": offset, "Length": length},
                     outputs={"Out": out})
    return out


def sequence_enumerate(input, win_size, pad_value=0, name=None):
    """Each id's window of win_size ids in its sequence, pad_value past its end."""
    check_variable_and_dtype(input, "input", ["int32", "int64"], "sequence_enumerate")
    helper = LayerHelper("sequence_enumerate", **locals())
    out = helper.create_tmp_variable(input.dtype, stop_gradient=True)
    out._shape = [-1, int(win_size)]
    out._lod_level = input.lod_level
    helper.append_op(type="sequence_enumerate", inputs={"X": input}, outputs={"Out": out},
                     attrs={"win_size": win_size, "pad_value": pad_value})
    return out


def sequence_scatter(input, index, updates, name=None):
    """input with updates added at index: the ids of index's sequence s (int64, a LoD tensor)
    address the elements of row s of input."""
    check_variable_and_dtype(input, "input", ["float32", "float64", "int32", "int64"], "sequence_scatter")
    check_variable_and_dtype(index, "index", ["int64"], "sequence_scatter")
    helper = LayerHelper("sequence_scatter", **locals())
    out = helper.create_tmp_variable(input.dtype)
    out._shape = list(input.shape)
    index.stop_gradient = True
    helper.append_op(type="sequence_scatter", inputs={"X": input, "Ids": index, "Updates": updates},
                     outputs={"Out": out})
    return out


def _lod_reset(helper, x, inputs, attrs, lod_level):
    out = helper.create_tmp_variable(x.dtype)
    out._shape = list(x.shape)
    out._lod_level = lod_level
    helper.append_op(type="lod_reset", inputs=inputs, outputs={"Out": out}, attrs=attrs)
    return out


def lod_reset(x, y=None, target_lod=None):
    """x under a new LoD: y's LoD (or, without one, y's values as offsets), else target_lod's
    offsets."""
    check_variable_and_dtype(x, "x", ["float32", "float64", "int32", "int64"], "lod_reset")
    helper = LayerHelper("lod_reset", **locals())
    if y is not None:
        check_type(y, "y", (Variable,), "lod_reset")
        y.stop_gradient = True
        return _lod_reset(helper, x, {"X": x, "Y": y}, {}, max(y.lod_level, 1))
    if target_lod is not None:
        return _lod_reset(helper, x, {"X": x}, {"target_lod": list(target_lod)}, 1)
    raise ValueError("lod_reset needs y or target_lod: the LoD to set")


def lod_append(x, level):
    """x with one more LoD level below its own: level's offsets (a list, or a Variable of
    them)."""
    if x is None:
        raise ValueError("lod_append: x is None")
    if not isinstance(level, (Variable, list, tuple)):
        raise ValueError("lod_append: level must be a list, tuple or Variable of offsets, not %s" %
                         type(level).__name__)
    check_variable_and_dtype(x, "x", ["float32", "float64", "int32", "int64"], "lod_append")
    helper = LayerHelper("lod_append", **locals())
    if isinstance(level, Variable):
        level.stop_gradient = True
        return _lod_reset(helper, x, {"X": x, "Y": level}, {"append": True}, max(x.lod_level, 0) + 1)
    return _lod_reset(helper, x, {"X": x}, {"target_lod": list(level), "append": True}, max(x.lod_level, 0) + 1)


def _pair(v):
    return [v, v] if isinstance(v, int) else list(v)


def im2sequence(input, filter_size=1, stride=1, padding=0, input_image_size=None, out_stride=1, name=None):
    """Each image's filter_size windows (by stride, zero padding [up, left, down, right], or
    [h, w] for both sides) as rows of C * kh * kw values, one sequence an image."""
    check_variable_and_dtype(input, "input", ["float32"], "im2sequence")
    filter_size, stride, padding = _pair(filter_size), _pair(stride), _pair(padding)
    if len(padding) == 2:
        padding = padding + padding
    inputs = {"X": input}
    attrs = {"kernels": filter_size, "strides": stride, "paddings": padding}
    if input_image_size is not None:
        inputs["Y"] = input_image_size
        attrs["out_stride"] = _pair(out_stride)
    helper = LayerHelper("im2sequence", **locals())
    out = helper.create_tmp_variable(helper.input_dtype())
    out._shape = [-1, int(input.shape[1]) * filter_size[0] * filter_size[1]]
    out._lod_level = 1
    helper.append_op(type="im2sequence", inputs=inputs, outputs={"Out": out}, attrs=attrs)
    return out


def row_conv(input, future_context_size, param_attr=None, act=None):
    """The lookahead convolution: each row plus the next future_context_size rows of its
    sequence, each scaled element-wise by its row of a learned [future_context_size + 1, D]
    filter; then `act`."""
    check_variable_and_dtype(input, "input", ["float32"], "row_conv")
    helper = LayerHelper("row_conv", **locals())
    dtype = helper.input_dtype()
    w = helper.create_parameter(attr=helper.param_attr, shape=[future_context_size + 1, int(input.shape[-1])],
                                dtype=dtype)
    pre_act = helper.create_tmp_variable(dtype)
    helper.append_op(type="row_conv", inputs={"X": [input], "Filter": [w]}, outputs={"Out": pre_act})
    out = helper.append_activation(pre_act)
    for v in (pre_act, out):
        v._shape = list(input.shape)
        v._lod_level = input.lod_level
    return out
