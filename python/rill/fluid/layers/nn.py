"""fluid.layers.nn: the neural-network layers, as Fluid 0.14 writes their ops.

Each layer appends the ops (types, slots, attributes) Fluid's layer appends, with its
parameter names ("fc_0.w_0") and default initializers, and gives its outputs the shapes
Fluid's shape inference would, so that later layers can size their parameters.
"""
import functools


from rill.fluid import core
from rill.fluid.framework import Variable
from rill.fluid.initializer import Constant, Normal
from rill.fluid.layer_helper import LayerHelper
from rill.fluid.layers.checks import check_dtype, check_type, check_variable_and_dtype
from rill.fluid.layers.tensor_attrs import int_list_argument
from rill.fluid.param_attr import ParamAttr

__all__ = [
    "fc", "embedding", "conv2d", "conv2d_transpose", "pool2d", "adaptive_pool2d", "batch_norm", "scatter", "layer_norm", "dropout", "cross_entropy",
    "square_error_cost", "softmax_with_cross_entropy", "accuracy", "topk", "mean", "mul", "matmul", "softmax",
    "reshape", "transpose", "split", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
    "reduce_all", "reduce_any", "scale", "clip",
    "elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div", "elementwise_max",
    "elementwise_min", "elementwise_pow", "elementwise_mod", "elementwise_floordiv", "relu6", "leaky_relu",
    "flatten", "squeeze", "unsqueeze", "stack", "expand", "slice", "gather", "one_hot",
    "sigmoid_cross_entropy_with_logits", "cumsum", "pad", "pad2d", "prelu", "image_resize", "resize_bilinear",
    "resize_nearest", "group_norm", "instance_norm", "label_smooth", "uniform_random", "gaussian_random",
    "uniform_random_batch_size_like", "gaussian_random_batch_size_like", "crop", "l2_normalize", "lrn", "maxout",
    "multiplex", "smooth_l1", "mean_iou", "cos_sim", "merge_selected_rows", "get_tensor_from_selected_rows",
    "gather_nd", "scatter_nd_add", "scatter_nd", "strided_slice",
]


def _pair(value, name):
    if isinstance(value, int):
        return [value, value]
    value = list(value)
    if len(value) != 2 or not all(isinstance(v, int) for v in value):
        raise ValueError("%s must be an int or a list of two ints, got %r" % (name, value))
    return value


def _groups(groups, layer):
    """A convolution's groups: 1 when None, else a positive int (a ValueError naming it)."""
    if groups is None:
        return 1
    if isinstance(groups, bool) or not isinstance(groups, int) or groups <= 0:
        raise ValueError("%s: groups must be a positive int, got %r" % (layer, groups))
    return groups


def _tmp(helper, dtype, shape=None, stop_gradient=False):
    out = helper.create_tmp_variable(dtype, stop_gradient=stop_gradient)
    if shape is not None:
        out._shape = [int(d) for d in shape]
    return out


def _prod(dims):
    return functools.reduce(lambda a, b: a * b, dims, 1)


def fc(input, size, num_flatten_dims=1, param_attr=None, bias_attr=None, act=None, is_test=False, name=None):
    helper = LayerHelper("fc", **locals())
    dtype = helper.input_dtype()
    mul_results = []
    for input_var, attr in helper.iter_inputs_and_params():
        input_shape = input_var.shape
        if num_flatten_dims == -1:  # the last dim is the one multiplied, as Paddle 1.8+ takes it
            num_flatten_dims = len(input_shape) - 1
        if len(input_shape) <= num_flatten_dims:
            raise ValueError("fc: input %s of shape %s has no dims past num_flatten_dims=%d" %
                             (input_var.name, list(input_shape), num_flatten_dims))
        width = _prod(input_shape[num_flatten_dims:])
        if width <= 0:
            raise ValueError("fc: input %s of shape %s: the dims past num_flatten_dims must be known" %
                             (input_var.name, list(input_shape)))
        w = helper.create_parameter(attr=attr, shape=[width, size], dtype=dtype, is_bias=False)
        tmp = _tmp(helper, dtype, list(input_shape[:num_flatten_dims]) + [size])
        helper.append_op(type="mul", inputs={"X": input_var, "Y": w}, outputs={"Out": tmp},
                         attrs={"x_num_col_dims": num_flatten_dims, "y_num_col_dims": 1})
        mul_results.append(tmp)
    if len(mul_results) == 1:
        pre_bias = mul_results[0]
    else:
        pre_bias = _tmp(helper, dtype, mul_results[0].shape)
        helper.append_op(type="sum", inputs={"X": mul_results}, outputs={"Out": pre_bias})
    pre_activation = helper.append_bias_op(pre_bias, dim_start=num_flatten_dims)
    pre_activation._shape = list(pre_bias.shape)
    out = helper.append_activation(pre_activation)
    out._shape = list(pre_bias.shape)
    return out


def embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None,
              dtype="float32"):
    """The rows of a [size[0], size[1]] table at the int64 ids `input` [..., 1]: [..., size[1]]."""
    shape = list(input.shape) if isinstance(input, Variable) else []
    if shape and shape[-1] == 1:
        shape = shape[:-1]
    return lookup("lookup_table", "embedding", input, size, shape, is_sparse, is_distributed, padding_idx,
                  param_attr, dtype)


def lookup(op_type, layer, input, size, leading_dims, is_sparse, is_distributed, padding_idx, param_attr, dtype):
    """embedding's and fluid.embedding's op: a [size[0], size[1]] table parameter, looked up
    at `input` into leading_dims + [size[1]]; a negative padding_idx counts from the end."""
    check_variable_and_dtype(input, "input", ["int64"], layer)
    check_dtype(dtype, "dtype", ["float16", "float32", "float64"], layer)
    helper = LayerHelper("embedding", param_attr=param_attr)
    w = helper.create_parameter(attr=helper.param_attr, shape=size, dtype=dtype, is_bias=False)
    out = _tmp(helper, dtype, list(leading_dims) + [size[1]])
    out._lod_level = input.lod_level  # the op shares the ids' LoD
    padding_idx = -1 if padding_idx is None else padding_idx if padding_idx >= 0 else size[0] + padding_idx
    helper.append_op(type=op_type, inputs={"Ids": input, "W": w}, outputs={"Out": out},
                     attrs={"is_sparse": is_sparse, "is_distributed": is_distributed, "padding_idx": padding_idx})
    return out


def _layout(data_format, layer):
    """Whether `data_format` is NHWC (channels last); ValueError for anything but NCHW and NHWC."""
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError("%s: data_format must be 'NCHW' or 'NHWC', got %r" % (layer, data_format))
    return data_format == "NHWC"


def _image_padding(padding, channel_last, layer):
    """A 2-D layer's padding as (paddings, padding_algorithm), as Fluid's layers read it: an
    int, two ints, four (top, bottom, left, right), one pair per dim of the input (the batch
    and channel pairs 0), or "SAME" / "VALID"."""
    if isinstance(padding, str):
        algorithm = padding.upper()
        if algorithm not in ("SAME", "VALID"):
            raise ValueError("%s: padding must be 'SAME' or 'VALID' when a string, got %r" % (layer, padding))
        return [0, 0], algorithm
    if isinstance(padding, int):
        return [padding, padding], "EXPLICIT"
    padding = list(padding)
    if len(padding) == 4 and all(isinstance(p, (list, tuple)) for p in padding):
        spatial = padding[1:3] if channel_last else padding[2:4]
        fixed = [padding[0], padding[3]] if channel_last else padding[:2]
        if any(list(p) != [0, 0] for p in fixed):
            raise ValueError("%s: padding %r pads the batch or channel dim" % (layer, padding))
        return [int(v) for pair in spatial for v in pair], "EXPLICIT"
    if len(padding) in (2, 4) and all(isinstance(p, int) for p in padding):
        return padding, "EXPLICIT"
    raise ValueError("%s: padding must be an int, 2 or 4 ints, pairs per dim, 'SAME' or 'VALID', got %r" %
                     (layer, padding))


def _out_size(size, k, s, pads, d, algorithm, ceil_mode=False):
    """A conv or pool output dim: -1 when the input's is unknown."""
    if size < 0:
        return -1
    if algorithm == "SAME":
        return -(-size // s)
    if algorithm == "VALID":
        pads = (0, 0)
    span = size + pads[0] + pads[1] - (d * (k - 1) + 1)
    return (span + (s - 1 if ceil_mode else 0)) // s + 1


def _bias_and_activation(helper, pre_bias, channel_last, out_shape):
    """A convolution's output with its per-channel bias added and its activation applied."""
    channel = 3 if channel_last else 1
    pre_act = helper.append_bias_op(pre_bias, dim_start=channel, dim_end=channel + 1)
    pre_act._shape = out_shape
    out = helper.append_activation(pre_act)
    out._shape = out_shape
    return out


def conv2d(input, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None, param_attr=None,
           bias_attr=None, use_cudnn=True, use_mkldnn=False, act=None, name=None, data_format="NCHW"):
    check_variable_and_dtype(input, "input", ["float16", "float32", "float64"], "conv2d")
    if not isinstance(use_cudnn, bool):
        raise ValueError("conv2d: use_cudnn must be a bool, got %r" % (use_cudnn,))
    channel_last = _layout(data_format, "conv2d")
    if len(input.shape) != 4:
        raise ValueError("conv2d: input %s must be 4-D (%s), has shape %s" % (input.name, data_format, list(input.shape)))
    num_channels = input.shape[3 if channel_last else 1]
    if num_channels < 0:
        raise ValueError("conv2d: the channel dim of input %s %s is unknown" % (input.name, list(input.shape)))
    l_type = "conv2d"
    if num_channels == groups and num_filters % num_channels == 0 and not use_cudnn:
        l_type = "depthwise_conv2d"
    groups = _groups(groups, "conv2d")
    helper = LayerHelper(l_type, **locals())
    dtype = helper.input_dtype()
    if num_channels % groups != 0:
        raise ValueError("conv2d: %d input channels are not divisible by groups=%d" % (num_channels, groups))
    num_filter_channels = num_channels // groups
    filter_size = _pair(filter_size, "filter_size")
    stride = _pair(stride, "stride")
    dilation = _pair(dilation, "dilation")
    padding, algorithm = _image_padding(padding, channel_last, "conv2d")
    four = padding if len(padding) == 4 else [padding[0], padding[0], padding[1], padding[1]]
    filter_shape = [num_filters, int(num_filter_channels)] + filter_size
    std = (2.0 / (filter_size[0] ** 2 * num_channels)) ** 0.5
    filter_param = helper.create_parameter(attr=helper.param_attr, shape=filter_shape, dtype=dtype,
                                           default_initializer=Normal(0.0, std, 0))
    hw = input.shape[1:3] if channel_last else input.shape[2:4]
    sizes = [_out_size(hw[i], filter_size[i], stride[i], four[2 * i:2 * i + 2],
                       1 if algorithm == "SAME" else dilation[i], algorithm) for i in range(2)]
    out_shape = [input.shape[0]] + (sizes + [num_filters] if channel_last else [num_filters] + sizes)
    pre_bias = _tmp(helper, dtype, out_shape)
    attrs = {"strides": stride, "paddings": padding, "dilations": dilation, "groups": groups}
    if algorithm != "EXPLICIT" or channel_last:
        attrs.update(padding_algorithm=algorithm, data_format=data_format)
    helper.append_op(type=l_type, inputs={"Input": input, "Filter": filter_param}, outputs={"Output": pre_bias},
                     attrs=attrs)
    return _bias_and_activation(helper, pre_bias, channel_last, out_shape)


def conv2d_transpose(input, num_filters, output_size=None, filter_size=None, padding=0, stride=1, dilation=1,
                     groups=None, param_attr=None, bias_attr=None, use_cudnn=True, act=None, name=None,
                     data_format="NCHW"):
    """The transposed convolution (the gradient of conv2d by its input) of input with a
    [C, num_filters / groups, kh, kw] filter. filter_size may be left out when output_size
    is given: it is then the size that makes output_size with no output padding."""
    channel_last = _layout(data_format, "conv2d_transpose")
    if len(input.shape) != 4:
        raise ValueError("conv2d_transpose: input %s must be 4-D (%s), has shape %s"
                         % (input.name, data_format, list(input.shape)))
    num_channels = input.shape[3 if channel_last else 1]
    if num_channels < 0:
        raise ValueError("conv2d_transpose: the channel dim of input %s %s is unknown" % (input.name, list(input.shape)))
    groups = _groups(groups, "conv2d_transpose")
    if num_channels % groups != 0 or num_filters % groups != 0:
        raise ValueError("conv2d_transpose: %d input channels and %d filters must both be divisible by groups=%d"
                         % (num_channels, num_filters, groups))
    helper = LayerHelper("conv2d_transpose", **locals())
    dtype = helper.input_dtype()
    stride = _pair(stride, "stride")
    dilation = _pair(dilation, "dilation")
    padding, algorithm = _image_padding(padding, channel_last, "conv2d_transpose")
    four = padding if len(padding) == 4 else [padding[0], padding[0], padding[1], padding[1]]
    hw = input.shape[1:3] if channel_last else input.shape[2:4]
    if output_size is not None:
        output_size = _pair(output_size, "output_size")
    if filter_size is None:
        if output_size is None:
            raise ValueError("conv2d_transpose: give filter_size or output_size")
        if algorithm != "EXPLICIT" or any(d < 0 for d in hw):
            raise ValueError("conv2d_transpose: filter_size can be inferred from output_size only with explicit "
                             "padding and a known input size")
        filter_size = [(output_size[i] - (hw[i] - 1) * stride[i] + four[2 * i] + four[2 * i + 1] - 1)
                       // dilation[i] + 1 for i in range(2)]
    filter_size = _pair(filter_size, "filter_size")
    filter_param = helper.create_parameter(attr=helper.param_attr,
                                           shape=[num_channels, num_filters // groups] + filter_size, dtype=dtype)
    if output_size is not None:
        sizes = list(output_size)
    elif algorithm == "SAME":
        sizes = [hw[i] * stride[i] if hw[i] > 0 else -1 for i in range(2)]
    else:
        pads = [0, 0, 0, 0] if algorithm == "VALID" else four
        sizes = [(hw[i] - 1) * stride[i] - pads[2 * i] - pads[2 * i + 1] + dilation[i] * (filter_size[i] - 1) + 1
                 if hw[i] > 0 else -1 for i in range(2)]
    out_shape = [input.shape[0]] + (sizes + [num_filters] if channel_last else [num_filters] + sizes)
    pre_bias = _tmp(helper, dtype, out_shape)
    helper.append_op(type="conv2d_transpose", inputs={"Input": input, "Filter": filter_param},
                     outputs={"Output": pre_bias},
                     attrs={"output_size": list(output_size or []), "strides": stride, "paddings": padding,
                            "padding_algorithm": algorithm, "dilations": dilation, "groups": groups,
                            "data_format": data_format})
    return _bias_and_activation(helper, pre_bias, channel_last, out_shape)


def pool2d(input, pool_size=-1, pool_type="max", pool_stride=1, pool_padding=0, global_pooling=False,
           use_cudnn=True, ceil_mode=False, use_mkldnn=False, name=None, exclusive=True, data_format="NCHW"):
    if pool_type not in ("max", "avg"):
        raise ValueError("pool2d: pool_type must be 'max' or 'avg', got %r" % (pool_type,))
    if not global_pooling and pool_size == -1:
        raise ValueError("pool2d: give pool_size, or set global_pooling")
    if not isinstance(use_cudnn, bool):
        raise TypeError("pool2d: use_cudnn must be a bool, got %r" % (use_cudnn,))
    channel_last = _layout(data_format, "pool2d")
    helper = LayerHelper("pool2d", **locals())
    dtype = helper.input_dtype()
    pool_size = _pair(pool_size, "pool_size")
    pool_stride = _pair(pool_stride, "pool_stride")
    pool_padding, algorithm = _image_padding(pool_padding, channel_last, "pool2d")
    if algorithm == "VALID" and ceil_mode:
        raise ValueError("pool2d: ceil_mode must be False with pool_padding 'VALID'")
    four = pool_padding if len(pool_padding) == 4 else [pool_padding[0], pool_padding[0], pool_padding[1],
                                                           pool_padding[1]]
    shape = list(input.shape)
    hw = shape[1:3] if channel_last else shape[2:4]
    if global_pooling:
        sizes = [1, 1]
    else:
        sizes = [_out_size(hw[i], pool_size[i], pool_stride[i], four[2 * i:2 * i + 2], 1, algorithm, ceil_mode)
                 for i in range(2)]
    out_shape = [shape[0]] + (sizes + [shape[3]] if channel_last else [shape[1]] + sizes)
    pool_out = _tmp(helper, dtype, out_shape)
    attrs = {"pooling_type": pool_type, "ksize": pool_size, "global_pooling": global_pooling,
             "strides": pool_stride, "paddings": pool_padding, "ceil_mode": ceil_mode}
    if not exclusive:
        attrs["exclusive"] = False
    if algorithm != "EXPLICIT" or channel_last:
        attrs.update(padding_algorithm=algorithm, data_format=data_format)
    helper.append_op(type="pool2d", inputs={"X": input}, outputs={"Out": pool_out}, attrs=attrs)
    return pool_out


def adaptive_pool2d(input, pool_size, pool_type="max", require_index=False, name=None):
    """Fluid 1.x's: NCHW pooling whose windows split H and W evenly into pool_size (Out's
    H and W); require_index (max only) also returns each maximum's index within its plane,
    int32 (max_pool2d_with_index), as (out, mask)."""
    if pool_type not in ("max", "avg"):
        raise ValueError("adaptive_pool2d: pool_type must be 'max' or 'avg', got %r" % (pool_type,))
    if require_index and pool_type != "max":
        raise ValueError("adaptive_pool2d: require_index needs pool_type 'max', got %r" % (pool_type,))
    helper = LayerHelper("adaptive_pool2d", **locals())
    pool_size = _pair(pool_size, "pool_size")
    out_shape = list(input.shape[:2]) + list(pool_size)
    pool_out = _tmp(helper, helper.input_dtype(), out_shape)
    if not require_index:
        helper.append_op(type="pool2d", inputs={"X": input}, outputs={"Out": pool_out},
                         attrs={"pooling_type": pool_type, "ksize": pool_size, "adaptive": True})
        return pool_out
    mask = _tmp(helper, "int32", out_shape, stop_gradient=True)
    helper.append_op(type="max_pool2d_with_index", inputs={"X": input}, outputs={"Out": pool_out, "Mask": mask},
                     attrs={"ksize": pool_size, "adaptive": True})
    return pool_out, mask


def batch_norm(input, act=None, is_test=False, momentum=0.9, epsilon=1e-05, param_attr=None, bias_attr=None,
               data_layout="NCHW", in_place=False, use_mkldnn=False, name=None, moving_mean_name=None,
               moving_variance_name=None, do_model_average_for_mean_and_var=False, fuse_with_relu=False):
    helper = LayerHelper("batch_norm", **locals())
    # Scale, Bias and the statistics of an fp16 input are fp32, as the kernels take them
    # (and as later Fluid makes them).
    dtype = helper.input_dtype()
    if dtype == core.VarDesc.VarType.FP16:
        dtype = core.VarDesc.VarType.FP32
    if data_layout == "NCHW":
        channel_num = input.shape[1]
    elif data_layout == "NHWC":
        channel_num = input.shape[-1]
    else:
        raise ValueError("batch_norm: data_layout must be NCHW or NHWC, got %r" % (data_layout,))
    param_shape = [channel_num]
    scale = helper.create_parameter(attr=helper.param_attr, shape=param_shape, dtype=dtype,
                                    default_initializer=Constant(1.0))
    bias = helper.create_parameter(attr=helper.bias_attr, shape=param_shape, dtype=dtype, is_bias=True)
    mean = helper.create_parameter(
        attr=ParamAttr(name=moving_mean_name, initializer=Constant(0.0), trainable=False,
                       do_model_average=do_model_average_for_mean_and_var), shape=param_shape, dtype=dtype)
    mean.stop_gradient = True
    variance = helper.create_parameter(
        attr=ParamAttr(name=moving_variance_name, initializer=Constant(1.0), trainable=False,
                       do_model_average=do_model_average_for_mean_and_var), shape=param_shape, dtype=dtype)
    variance.stop_gradient = True
    saved_mean = _tmp(helper, dtype, param_shape, stop_gradient=True)
    saved_variance = _tmp(helper, dtype, param_shape, stop_gradient=True)
    out = input if in_place else _tmp(helper, input.dtype, input.shape)
    attrs = {"momentum": momentum, "epsilon": epsilon, "is_test": is_test}
    if data_layout != "NCHW":
        attrs["data_layout"] = data_layout
    helper.append_op(type="batch_norm",
                     inputs={"X": input, "Scale": scale, "Bias": bias, "Mean": mean, "Variance": variance},
                     outputs={"Y": out, "MeanOut": mean, "VarianceOut": variance, "SavedMean": saved_mean,
                              "SavedVariance": saved_variance}, attrs=attrs)
    result = helper.append_activation(out)
    result._shape = list(input.shape)
    return result


def layer_norm(input, scale=True, shift=True, begin_norm_axis=1, epsilon=1e-05, param_attr=None, bias_attr=None,
               act=None, name=None):
    helper = LayerHelper("layer_norm", **locals())
    dtype = helper.input_dtype()
    param_shape = [_prod(input.shape[begin_norm_axis:])]
    inputs = {"X": input}
    if scale:
        inputs["Scale"] = helper.create_parameter(attr=helper.param_attr, shape=param_shape, dtype=dtype,
                                                  default_initializer=Constant(1.0))
    if shift:
        inputs["Bias"] = helper.create_parameter(attr=helper.bias_attr, shape=param_shape, dtype=dtype,
                                                 is_bias=True)
    rows = [_prod(input.shape[:begin_norm_axis])]
    mean_out = _tmp(helper, dtype, rows, stop_gradient=True)
    variance_out = _tmp(helper, dtype, rows, stop_gradient=True)
    out = _tmp(helper, dtype, input.shape)
    helper.append_op(type="layer_norm", inputs=inputs,
                     outputs={"Y": out, "Mean": mean_out, "Variance": variance_out},
                     attrs={"epsilon": epsilon, "begin_norm_axis": begin_norm_axis})
    result = helper.append_activation(out)
    result._shape = list(input.shape)
    return result


def dropout(x, dropout_prob, is_test=False, seed=None, name=None):
    helper = LayerHelper("dropout", **locals())
    out = _tmp(helper, x.dtype, x.shape)
    mask = _tmp(helper, x.dtype, x.shape, stop_gradient=True)
    helper.append_op(type="dropout", inputs={"X": [x]}, outputs={"Out": [out], "Mask": [mask]},
                     attrs={"dropout_prob": dropout_prob, "is_test": is_test, "fix_seed": seed is not None,
                            "seed": seed if seed is not None else 0})
    return out


def cross_entropy(input, label, soft_label=False):
    helper = LayerHelper("cross_entropy", **locals())
    out = _tmp(helper, input.dtype, list(input.shape[:-1]) + [1])
    helper.append_op(type="cross_entropy", inputs={"X": [input], "Label": [label]}, outputs={"Y": [out]},
                     attrs={"soft_label": soft_label})
    return out


def square_error_cost(input, label):
    helper = LayerHelper("square_error_cost", **locals())
    minus_out = _tmp(helper, input.dtype, input.shape)
    helper.append_op(type="elementwise_sub", inputs={"X": [input], "Y": [label]}, outputs={"Out": [minus_out]})
    square_out = _tmp(helper, input.dtype, input.shape)
    helper.append_op(type="square", inputs={"X": [minus_out]}, outputs={"Out": [square_out]})
    return square_out


def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=-100):
    helper = LayerHelper("softmax_with_cross_entropy", **locals())
    softmax = _tmp(helper, logits.dtype, logits.shape)
    loss = _tmp(helper, logits.dtype, list(logits.shape[:-1]) + [1])
    helper.append_op(type="softmax_with_cross_entropy", inputs={"Logits": logits, "Label": label},
                     outputs={"Softmax": softmax, "Loss": loss},
                     attrs={"soft_label": soft_label, "ignore_index": ignore_index})
    return loss


def topk(input, k, name=None):
    helper = LayerHelper("top_k", **locals())
    shape = list(input.shape[:-1]) + [k]
    values = _tmp(helper, input.dtype, shape, stop_gradient=True)
    indices = _tmp(helper, "int64", shape, stop_gradient=True)
    helper.append_op(type="top_k", inputs={"X": [input]}, outputs={"Out": [values], "Indices": [indices]},
                     attrs={"k": k})
    return values, indices


def cos_sim(X, Y):
    """The cosine similarity of each row of X with the same row of Y, or with Y's one row:
    [rows, 1]."""
    check_variable_and_dtype(X, "X", ["float32", "float64"], "cos_sim")
    check_variable_and_dtype(Y, "Y", ["float32", "float64"], "cos_sim")
    helper = LayerHelper("cos_sim", **locals())
    out = _tmp(helper, X.dtype, [X.shape[0], 1])
    out._lod_level = X.lod_level
    xnorm = _tmp(helper, X.dtype, [X.shape[0], 1])
    ynorm = _tmp(helper, X.dtype, [Y.shape[0], 1])
    helper.append_op(type="cos_sim", inputs={"X": [X], "Y": [Y]},
                     outputs={"Out": [out], "XNorm": [xnorm], "YNorm": [ynorm]})
    return out


def accuracy(input, label, k=1, correct=None, total=None):
    check_variable_and_dtype(input, "input", ["float16", "float32", "float64"], "accuracy")
    helper = LayerHelper("accuracy", **locals())
    topk_out, topk_indices = topk(input, k=k)
    acc_out = _tmp(helper, "float32", [1])
    if correct is None:
        correct = _tmp(helper, "int64", [1])
    if total is None:
        total = _tmp(helper, "int64", [1])
    helper.append_op(type="accuracy", inputs={"Out": [topk_out], "Indices": [topk_indices], "Label": [label]},
                     outputs={"Accuracy": [acc_out], "Correct": [correct], "Total": [total]})
    return acc_out


def mean(x, name=None):
    helper = LayerHelper("mean", **locals())
    out = _tmp(helper, x.dtype, [1])
    helper.append_op(type="mean", inputs={"X": [x]}, outputs={"Out": [out]})
    return out


def merge_selected_rows(x, name=None):
    """SelectedRows x (a sparse gradient) with each row once, ascending, a repeated row's
    values summed."""
    helper = LayerHelper("merge_selected_rows", **locals())
    out = helper.create_tmp_variable(x.dtype)
    out.type = core.VarDesc.VarType.SELECTED_ROWS
    helper.append_op(type="merge_selected_rows", inputs={"X": x}, outputs={"Out": out})
    return out


def get_tensor_from_selected_rows(x, name=None):
    """The value tensor of SelectedRows x: [number of rows, width...]."""
    if x.type != core.VarDesc.VarType.SELECTED_ROWS:
        raise TypeError("get_tensor_from_selected_rows: %s must be SelectedRows" % x.name)
    helper = LayerHelper("get_tensor_from_selected_rows", **locals())
    out = _tmp(helper, x.dtype)
    helper.append_op(type="get_tensor_from_selected_rows", inputs={"X": x}, outputs={"Out": out})
    return out


def mul(x, y, x_num_col_dims=1, y_num_col_dims=1, name=None):
    helper = LayerHelper("mul", **locals())
    out = _tmp(helper, x.dtype, list(x.shape[:x_num_col_dims]) + list(y.shape[y_num_col_dims:]))
    helper.append_op(type="mul", inputs={"X": x, "Y": y}, outputs={"Out": out},
                     attrs={"x_num_col_dims": x_num_col_dims, "y_num_col_dims": y_num_col_dims})
    return out


def _matmul_shape(xs, ys, transpose_x, transpose_y):
    """matmul's output shape as Fluid infers it: a 1-D X is a row [1, K] and a 1-D Y a column
    [K, 1], whose unit dim the output then drops; batch dims come from X when it has them,
    else from Y. None when a shape is unknown."""
    if not xs or not ys:
        return None
    x2 = [1] + xs if len(xs) == 1 else xs
    y2 = ys + [1] if len(ys) == 1 else ys
    height = x2[-1] if transpose_x else x2[-2]
    width = y2[-2] if transpose_y else y2[-1]
    batch = xs[:-2] if len(xs) > 2 else ys[:-2] if len(ys) > 2 else []
    out = batch + [height, width]
    if len(xs) == 1 and out[-2] == 1:
        out = out[:-2] + [out[-1]]
    if len(ys) == 1 and out[-1] == 1:
        out = out[:-1]
    return out or [1]


def matmul(x, y, transpose_x=False, transpose_y=False, alpha=1.0, name=None):
    helper = LayerHelper("matmul", **locals())
    out = _tmp(helper, x.dtype, _matmul_shape(list(x.shape), list(y.shape), transpose_x, transpose_y))
    helper.append_op(type="matmul", inputs={"X": x, "Y": y}, outputs={"Out": out},
                     attrs={"transpose_X": transpose_x, "transpose_Y": transpose_y, "alpha": float(alpha)})
    return out


def softmax(input, use_cudnn=True, name=None):
    helper = LayerHelper("softmax", **locals())
    out = _tmp(helper, input.dtype, input.shape)
    helper.append_op(type="softmax", inputs={"X": input}, outputs={"Out": out})
    return out


def reshape(x, shape, actual_shape=None, act=None, inplace=True, name=None):
    """x with `shape`: a list of ints (0 keeps x's dim there, one -1 takes the rest) and
    one-element int Variables, or a 1-D int Variable; actual_shape, a 1-D int Variable,
    overrides shape when the program runs (Fluid's older form of a Variable shape)."""
    check_variable_and_dtype(x, "x", ["float16", "float32", "float64", "int32", "int64", "bool"], "reshape")
    check_type(shape, "shape", (list, tuple, Variable), "reshape")
    check_type(actual_shape, "actual_shape", (Variable, type(None)), "reshape")
    helper = LayerHelper("reshape2", **locals())
    inputs, attrs = {"X": x}, {}
    if isinstance(shape, (list, tuple)):
        known = [d for d in shape if not isinstance(d, Variable)]
        if known.count(-1) > 1:
            raise AssertionError("reshape: only one dimension of shape may be -1, got %r" % (list(shape),))
        for i, d in enumerate(shape):
            if isinstance(d, Variable):
                continue
            if d == 0 and i >= len(x.shape):
                raise AssertionError("reshape: shape[%d] is 0 (keep x's dim), but x has %d dims" % (i, len(x.shape)))
            if d < -1:
                raise AssertionError("reshape: shape[%d] is %d; only -1 may be negative" % (i, d))
    requested = int_list_argument(shape, "shape", "reshape", inputs, attrs, "shape", "Shape", "ShapeTensor")
    out_shape = [x.shape[i] if d == 0 and i < len(x.shape) else d for i, d in enumerate(requested)]
    if out_shape.count(-1) == 1 and all(d > 0 for d in x.shape) and not isinstance(shape, Variable) and \
            not any(isinstance(d, Variable) for d in shape):
        known = _prod([d for d in out_shape if d != -1])
        out_shape[out_shape.index(-1)] = _prod(x.shape) // known
    if actual_shape is not None:
        actual_shape.stop_gradient = True
        inputs["Shape"] = actual_shape
    out = _tmp(helper, x.dtype, out_shape)
    x_shape = _tmp(helper, x.dtype, [0] + list(x.shape), stop_gradient=True)
    helper.append_op(type="reshape2", inputs=inputs, outputs={"Out": out, "XShape": x_shape}, attrs=attrs)
    result = helper.append_activation(out)
    result._shape = out_shape
    return result


def transpose(x, perm, name=None):
    check_variable_and_dtype(x, "x", ["float16", "float32", "float64", "int32", "int64"], "transpose")
    if not isinstance(perm, (list, tuple)):
        raise TypeError("The type of 'perm' in transpose must be list or tuple, but received %s" % type(perm).__name__)
    if len(perm) != len(x.shape):
        raise ValueError("transpose: perm %s has %d axes, %s has %d dims" % (perm, len(perm), x.name, len(x.shape)))
    helper = LayerHelper("transpose2", **locals())
    out = _tmp(helper, x.dtype, [x.shape[i] for i in perm])
    x_shape = _tmp(helper, x.dtype, [0] + list(x.shape), stop_gradient=True)
    helper.append_op(type="transpose2", inputs={"X": [x]}, outputs={"Out": [out], "XShape": [x_shape]},
                     attrs={"axis": list(perm)})
    return out


def split(input, num_or_sections, dim=-1, name=None):
    """input split along dim (an int or a one-element int Variable) into num_or_sections
    equal parts (an int), or parts of the given sizes (a list of ints, at most one -1 for the
    rest, and one-element int Variables)."""
    helper = LayerHelper("split", **locals())
    shape = list(input.shape)
    inputs, attrs = {"X": input}, {"num": 0, "sections": [], "axis": 0}
    if isinstance(dim, Variable):
        check_dtype(dim.dtype, "dim", ["int32", "int64"], "split")
        dim.stop_gradient = True
        inputs["AxisTensor"] = dim
        axis = None
    else:
        check_type(dim, "dim", (int,), "split")
        axis = dim if dim >= 0 else dim + len(shape)
        attrs["axis"] = dim
    if isinstance(num_or_sections, int) and not isinstance(num_or_sections, bool):
        if axis is not None and shape[axis] > 0 and shape[axis] % num_or_sections:
            raise ValueError("split: dim %d of %s (%d) is not divisible by %d" % (axis, input.name, shape[axis],
                                                                                 num_or_sections))
        attrs["num"] = num_or_sections
        sizes = [shape[axis] // num_or_sections if axis is not None and shape[axis] > 0 else -1] * num_or_sections
    elif isinstance(num_or_sections, (list, tuple)):
        if [d for d in num_or_sections if not isinstance(d, Variable)].count(-1) > 1:
            raise ValueError("split: at most one section may be -1, got %r" % (num_or_sections,))
        sizes = int_list_argument(num_or_sections, "num_or_sections", "split", inputs, attrs, "sections", None,
                                  "SectionsTensorList")
        if axis is not None and shape[axis] > 0 and sizes.count(-1) == 1 and \
                not any(isinstance(d, Variable) for d in num_or_sections):
            sizes = [shape[axis] - (sum(sizes) + 1) if d == -1 else d for d in sizes]
    else:
        raise TypeError("split: num_or_sections must be an int, list or tuple, got %s" % type(num_or_sections).__name__)
    outs = []
    for size in sizes:
        o_shape = list(shape)
        if axis is not None:
            o_shape[axis] = size
        else:
            o_shape = [-1] * len(shape)
        outs.append(_tmp(helper, input.dtype, o_shape))
    helper.append_op(type="split", inputs=inputs, outputs={"Out": outs}, attrs=attrs)
    return outs


def _reduce(op_type, input, dim, keep_dim, name):
    helper = LayerHelper(op_type, input=input, name=name)
    if dim is not None and not isinstance(dim, (list, tuple)):
        dim = [dim]
    shape = list(input.shape)
    if dim is None:
        out_shape = [1] * len(shape) if keep_dim else [1]
    else:
        axes = [d if d >= 0 else d + len(shape) for d in dim]
        out_shape = [1 if i in axes else s for i, s in enumerate(shape)] if keep_dim else \
            [s for i, s in enumerate(shape) if i not in axes] or [1]
    out = _tmp(helper, input.dtype, out_shape)
    helper.append_op(type=op_type, inputs={"X": input}, outputs={"Out": out},
                     attrs={"dim": list(dim) if dim is not None else [0], "keep_dim": keep_dim,
                            "reduce_all": dim is None})
    return out


def reduce_sum(input, dim=None, keep_dim=False, name=None):
    return _reduce("reduce_sum", input, dim, keep_dim, name)


def reduce_mean(input, dim=None, keep_dim=False, name=None):
    return _reduce("reduce_mean", input, dim, keep_dim, name)


def reduce_max(input, dim=None, keep_dim=False, name=None):
    return _reduce("reduce_max", input, dim, keep_dim, name)


def reduce_min(input, dim=None, keep_dim=False, name=None):
    return _reduce("reduce_min", input, dim, keep_dim, name)


def reduce_prod(input, dim=None, keep_dim=False, name=None):
    return _reduce("reduce_prod", input, dim, keep_dim, name)


def reduce_all(input, dim=None, keep_dim=False, name=None):
    return _reduce("reduce_all", input, dim, keep_dim, name)


def reduce_any(input, dim=None, keep_dim=False, name=None):
    return _reduce("reduce_any", input, dim, keep_dim, name)


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    helper = LayerHelper("scale", **locals())
    out = _tmp(helper, x.dtype, x.shape)
    helper.append_op(type="scale", inputs={"X": x}, outputs={"Out": out},
                     attrs={"scale": float(scale), "bias": float(bias), "bias_after_scale": bias_after_scale})
    result = helper.append_activation(out)
    result._shape = list(x.shape)
    return result


def clip(x, min, max, name=None):
    check_variable_and_dtype(x, "x", ["float16", "float32", "float64"], "clip")
    helper = LayerHelper("clip", **locals())
    out = _tmp(helper, x.dtype, x.shape)
    helper.append_op(type="clip", inputs={"X": x}, outputs={"Out": out},
                     attrs={"min": float(min), "max": float(max)})
    return out


def _elementwise(op_type, x, y, axis, act, name):
    helper = LayerHelper(op_type, x=x, y=y, axis=axis, act=act, name=name)
    out = _tmp(helper, x.dtype, x.shape)
    helper.append_op(type=op_type, inputs={"X": x, "Y": y}, outputs={"Out": out}, attrs={"axis": axis})
    result = helper.append_activation(out)
    result._shape = list(x.shape)
    return result


def elementwise_add(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_add", x, y, axis, act, name)


def elementwise_sub(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_sub", x, y, axis, act, name)


def elementwise_mul(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_mul", x, y, axis, act, name)


def elementwise_div(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_div", x, y, axis, act, name)


def elementwise_max(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_max", x, y, axis, act, name)


def elementwise_min(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_min", x, y, axis, act, name)


def elementwise_pow(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_pow", x, y, axis, act, name)


def elementwise_mod(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_mod", x, y, axis, act, name)


def elementwise_floordiv(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_floordiv", x, y, axis, act, name)


def _unary(op_type, x, attrs, name):
    helper = LayerHelper(op_type, x=x, name=name)
    out = _tmp(helper, x.dtype, x.shape)
    helper.append_op(type=op_type, inputs={"X": x}, outputs={"Out": out}, attrs=attrs)
    return out


def relu6(x, threshold=6.0, name=None):
    return _unary("relu6", x, {"threshold": float(threshold)}, name)


def leaky_relu(x, alpha=0.02, name=None):
    return _unary("leaky_relu", x, {"alpha": float(alpha)}, name)


def _with_xshape(op_type, x, out_shape, attrs, name):
    helper = LayerHelper(op_type, x=x, name=name)
    out = _tmp(helper, x.dtype, out_shape)
    x_shape = _tmp(helper, x.dtype, [0] + list(x.shape), stop_gradient=True)
    helper.append_op(type=op_type, inputs={"X": x}, outputs={"Out": out, "XShape": x_shape}, attrs=attrs)
    return out


def flatten(x, axis=1, name=None):
    check_variable_and_dtype(x, "x", ["float32", "float64", "int8", "int32", "int64", "uint8"], "flatten")
    s = list(x.shape)
    out_shape = [_prod(s[:axis]), _prod(s[axis:])] if all(d > 0 for d in s) else [-1, -1]
    return _with_xshape("flatten2", x, out_shape, {"axis": axis}, name)


def squeeze(input, axes, name=None):
    s = list(input.shape)
    axes_n = [a if a >= 0 else a + len(s) for a in axes]
    return _with_xshape("squeeze2", input, [d for i, d in enumerate(s) if i not in axes_n], {"axes": list(axes)},
                        name)


def unsqueeze(input, axes, name=None):
    s = list(input.shape)
    for a in sorted(axes):
        s.insert(a if a >= 0 else a + len(s) + 1, 1)
    return _with_xshape("unsqueeze2", input, s, {"axes": list(axes)}, name)


def stack(x, axis=0):
    from rill.fluid.layers.control_flow import is_array, tensor_array_to_tensor
    if is_array(x):
        return tensor_array_to_tensor(x, axis, use_stack=True)[0]
    if isinstance(x, Variable):
        x = [x]
    helper = LayerHelper("stack", x=x)
    s = list(x[0].shape)
    s.insert(axis if axis >= 0 else axis + len(s) + 1, len(x))
    out = _tmp(helper, x[0].dtype, s)
    helper.append_op(type="stack", inputs={"X": x}, outputs={"Y": out}, attrs={"axis": axis})
    return out


def expand(x, expand_times, name=None):
    """x repeated expand_times[i] times along dim i; expand_times a list of ints and
    one-element int Variables, or a 1-D int Variable."""
    check_variable_and_dtype(x, "x", ["bool", "float16", "float32", "float64", "int32", "int64"], "expand")
    helper = LayerHelper("expand", x=x, name=name)
    inputs, attrs = {"X": x}, {}
    times = int_list_argument(expand_times, "expand_times", "expand", inputs, attrs, "expand_times", "ExpandTimes",
                              "expand_times_tensor", dtype_checked=False)
    shape = [d * t if d > 0 and t > 0 else -1 for d, t in zip(x.shape, times)] if times else [-1] * len(x.shape)
    out = _tmp(helper, x.dtype, shape)
    helper.append_op(type="expand", inputs=inputs, outputs={"Out": out}, attrs=attrs)
    return out


def slice(input, axes, starts, ends):
    """input[starts[i]:ends[i]] along each axes[i]; starts and ends lists of ints and
    one-element int Variables, or 1-D int Variables."""
    helper = LayerHelper("slice", input=input)
    inputs, attrs = {"Input": input}, {"axes": list(axes)}
    starts = int_list_argument(starts, "starts", "slice", inputs, attrs, "starts", "StartsTensor", "StartsTensorList",
                               dtype_checked=False)
    ends = int_list_argument(ends, "ends", "slice", inputs, attrs, "ends", "EndsTensor", "EndsTensorList",
                             dtype_checked=False)
    if not starts:
        attrs["starts"] = [-1] * len(axes)
    if not ends:
        attrs["ends"] = [-1] * len(axes)
    out = _tmp(helper, input.dtype)
    helper.append_op(type="slice", inputs=inputs, outputs={"Out": out}, attrs=attrs)
    return out


def _strided_count(size, start, end, stride):
    """How many elements input[start:end:stride] keeps of a dim of `size` (-1: unknown), as
    the strided_slice op counts them."""
    if size < 0:
        return -1
    if stride == 0:
        raise ValueError("strided_slice: a stride is 0")
    start += size if start < 0 else 0
    end += size if end < 0 and not (end == -1 and stride < 0) else 0
    if stride < 0:
        start, end = start + 1, end + 1
    left, right = max(0, min(start, end)), min(size, max(start, end))
    return max(0, -(-(right - left) // abs(stride)))


def strided_slice(input, axes, starts, ends, strides):
    """input[starts[i]:ends[i]:strides[i]] along each axes[i] (Python's slicing; a bound past
    the dim is clamped); starts, ends and strides lists of ints and one-element int
    Variables, or 1-D int Variables."""
    check_variable_and_dtype(input, "input", ["bool", "float32", "float64", "int32", "int64"], "strided_slice")
    check_type(axes, "axes", (list, tuple), "strided_slice")
    helper = LayerHelper("strided_slice", input=input)
    inputs, attrs = {"Input": input}, {"axes": list(axes)}
    known = True
    for values, name, tensor, listed in ((starts, "starts", "StartsTensor", "StartsTensorList"),
                                         (ends, "ends", "EndsTensor", "EndsTensorList"),
                                         (strides, "strides", "StridesTensor", "StridesTensorList")):
        int_list_argument(values, name, "strided_slice", inputs, attrs, name, tensor, listed)
        known = known and tensor not in inputs and listed not in inputs
        if not attrs[name]:
            attrs[name] = [1] * len(axes)
    attrs["infer_flags"] = [1 if known else -1] * len(axes)
    shape = list(input.shape)
    for i, axis in enumerate(axes):
        shape[axis] = _strided_count(shape[axis], starts[i], ends[i], strides[i]) if known else -1
    out = _tmp(helper, input.dtype, shape)
    helper.append_op(type="strided_slice", inputs=inputs, outputs={"Out": out}, attrs=attrs)
    return out


def gather(input, index, overwrite=False):
    """The rows (slices along dim 0) of input at index."""
    check_variable_and_dtype(input, "x", ["float16", "float32", "float64", "int32", "int64", "uint8"], "gather")
    check_variable_and_dtype(index, "index", ["int32", "int64"], "gather")
    helper = LayerHelper("gather", **locals())
    out = _tmp(helper, input.dtype, [index.shape[0]] + list(input.shape[1:]))
    helper.append_op(type="gather", inputs={"X": input, "Index": index}, outputs={"Out": out},
                     attrs={"overwrite": overwrite})
    return out


def _nd_slices_shape(input_shape, index, layer, too_long):
    """The shape of the slices `index` names in a tensor of input_shape: index's dims but
    the last, then input_shape's from the last one's length k (a ValueError starting with
    too_long, Paddle's words, where k is longer than the rank)."""
    k = index.shape[-1] if index.shape else -1
    if k > len(input_shape):
        raise ValueError("%s %s: Input(Index)'s last dimension %d is longer than Input(X)'s rank %d (%s)" %
                         (too_long, layer, k, len(input_shape), list(input_shape)))
    return list(index.shape[:-1]) + (list(input_shape[k:]) if k >= 0 else [-1])


def gather_nd(input, index, name=None):
    """The slices of input that index's rows name: row (i0, .., ik-1) is input[i0, .., ik-1, ...]."""
    check_variable_and_dtype(input, "input", ["bool", "float32", "float64", "int16", "int32", "int64", "uint8"],
                             "gather_np")
    check_variable_and_dtype(index, "index", ["int32", "int64"], "gather_np")
    helper = LayerHelper("gather_nd", **locals())
    shape = _nd_slices_shape(input.shape, index, "gather_nd",
                             "Input(Index).shape[-1] should be no greater than Input(X).rank:")
    out = _tmp(helper, input.dtype, shape)
    helper.append_op(type="gather_nd", inputs={"X": input, "Index": index}, outputs={"Out": out})
    return out


def scatter_nd_add(ref, index, updates, name=None):
    """ref with each slice of updates added to the slice of ref its index row names."""
    if ref.dtype != updates.dtype:
        raise ValueError("ref and updates must have same data type, got %s and %s" % (ref.dtype, updates.dtype))
    helper = LayerHelper("scatter_nd_add", **locals())
    want = _nd_slices_shape(ref.shape, index, "scatter_nd_add",
                            "The last dimension of Input(Index)'s shape should be no greater than the rank of "
                            "Input(X):")
    given = list(updates.shape)
    if len(given) != len(want) or any(a >= 0 and b >= 0 and a != b for a, b in zip(given, want)):
        raise ValueError("Updates has wrong shape: %s, where Index %s and X %s make it %s" %
                         (given, list(index.shape), list(ref.shape), want))
    out = _tmp(helper, ref.dtype, ref.shape)
    helper.append_op(type="scatter_nd_add", inputs={"X": ref, "Index": index, "Updates": updates},
                     outputs={"Out": out})
    return out


def scatter_nd(index, updates, shape, name=None):
    """A tensor of `shape`, zeros but where updates' slices are added at the slices index names."""
    from rill.fluid.layers.tensor import zeros
    return scatter_nd_add(zeros(shape, updates.dtype), index, updates, name)


def one_hot(input, depth, allow_out_of_range=False):
    """input [..., 1] of class indices (int32 or int64) as one-hot float32 rows [..., depth];
    depth an int or a one-element int Variable."""
    leading = list(input.shape[:-1]) if isinstance(input, Variable) else []
    return one_hot_of("one_hot", "one_hot", input, depth, allow_out_of_range, leading)


def one_hot_of(op_type, layer, input, depth, allow_out_of_range, leading_dims):
    """one_hot's and fluid.one_hot's op: class indices `input` as one-hot float32 rows,
    leading_dims + [depth]; depth an int or a one-element int Variable (depth_tensor)."""
    check_variable_and_dtype(input, "input", ["int32", "int64"], layer)
    check_type(depth, "depth", (int, Variable), layer)
    helper = LayerHelper(op_type)
    inputs, attrs = {"X": input}, {"allow_out_of_range": allow_out_of_range}
    if isinstance(depth, Variable):
        depth.stop_gradient = True
        inputs["depth_tensor"] = depth
    else:
        attrs["depth"] = depth
    last = depth if isinstance(depth, int) else -1
    out = _tmp(helper, "float32", list(leading_dims) + [last], stop_gradient=True)
    helper.append_op(type=op_type, inputs=inputs, outputs={"Out": out}, attrs=attrs)
    return out


def sigmoid_cross_entropy_with_logits(x, label, ignore_index=-100, normalize=False, name=None):
    helper = LayerHelper("sigmoid_cross_entropy_with_logits", **locals())
    out = _tmp(helper, x.dtype, x.shape)
    helper.append_op(type="sigmoid_cross_entropy_with_logits", inputs={"X": x, "Label": label},
                     outputs={"Out": out}, attrs={"ignore_index": ignore_index, "normalize": normalize})
    return out


def cumsum(x, axis=None, exclusive=None, reverse=None):
    """Running sums of x along axis (default: the last), Fluid's defaults for the rest."""
    helper = LayerHelper("cumsum", **locals())
    attrs = {"axis": -1 if axis is None else axis}
    if exclusive is not None:
        attrs["exclusive"] = exclusive
    if reverse is not None:
        attrs["reverse"] = reverse
    out = _tmp(helper, x.dtype, x.shape)
    helper.append_op(type="cumsum", inputs={"X": x}, outputs={"Out": out}, attrs=attrs)
    return out


def pad(x, paddings, pad_value=0.0, name=None):
    """x with paddings[2k] values before and paddings[2k + 1] after along each dim k."""
    helper = LayerHelper("pad", **locals())
    shape = [d if d < 0 else d + paddings[2 * k] + paddings[2 * k + 1] for k, d in enumerate(x.shape)]
    out = _tmp(helper, x.dtype, shape)
    helper.append_op(type="pad", inputs={"X": x}, outputs={"Out": out},
                     attrs={"paddings": list(paddings), "pad_value": float(pad_value)})
    return out


def pad2d(input, paddings=(0, 0, 0, 0), mode="constant", pad_value=0.0, data_format="NCHW", name=None):
    """input padded along H and W by [top, bottom, left, right]: constant, reflect or edge."""
    helper = LayerHelper("pad2d", **locals())
    h, w = (1, 2) if data_format == "NHWC" else (2, 3)
    shape = list(input.shape)
    for dim, (before, after) in ((h, paddings[0:2]), (w, paddings[2:4])):
        if shape[dim] >= 0:
            shape[dim] += before + after
    out = _tmp(helper, input.dtype, shape)
    helper.append_op(type="pad2d", inputs={"X": input}, outputs={"Out": out},
                     attrs={"paddings": list(paddings), "mode": mode, "pad_value": float(pad_value),
                            "data_format": data_format})
    return out


def prelu(x, mode, param_attr=None, name=None):
    """x where x > 0, else alpha * x; alpha a parameter (0.25 at first): one ("all"), one per
    channel ("channel"), or one per element of a sample ("element")."""
    if mode not in ("all", "channel", "element"):
        raise ValueError("prelu mode must be all, channel or element, got %r" % (mode,))
    helper = LayerHelper("prelu", **locals())
    shape = {"all": [1], "channel": [1, x.shape[1], 1, 1], "element": [1] + list(x.shape[1:])}[mode]
    alpha = helper.create_parameter(attr=helper.param_attr, shape=shape, dtype="float32", is_bias=False,
                                    default_initializer=Constant(0.25))
    out = _tmp(helper, x.dtype, x.shape)
    helper.append_op(type="prelu", inputs={"X": x, "Alpha": alpha}, outputs={"Out": out}, attrs={"mode": mode})
    return out


def image_resize(input, out_shape=None, scale=None, name=None, resample="BILINEAR", actual_shape=None,
                 align_corners=True, align_mode=1, data_format="NCHW"):
    """input [N, C, H, W] (or NHWC) resized by bilinear_interp or nearest_interp to out_shape
    ([h, w] of ints and one-element int Variables, or a [2] int32 Variable), or else by scale
    (a number or a one-element Variable); actual_shape, a [2] Variable, overrides both when
    the program runs (Fluid's older form of a Variable out_shape)."""
    methods = {"BILINEAR": "bilinear", "NEAREST": "nearest"}
    resample = str(resample).upper()
    if resample not in methods:
        raise ValueError("image_resize: resample must be BILINEAR or NEAREST for 4-D input, got %r" % (resample,))
    if len(input.shape) != 4:
        raise ValueError("image_resize: %s takes a 4-D input, %s has shape %s" % (resample, input.name,
                                                                                  list(input.shape)))
    if not isinstance(align_corners, bool):
        raise TypeError("image_resize: align_corners must be a bool, got %r" % (align_corners,))
    if align_mode not in (0, 1):
        raise ValueError("image_resize: align_mode must be 0 or 1, got %r" % (align_mode,))
    if out_shape is None and scale is None:
        raise ValueError("image_resize needs out_shape or scale")
    channel_last = _layout(data_format, "image_resize")
    method = methods[resample]
    helper = LayerHelper(method + "_interp", **locals())
    inputs = {"X": input}
    attrs = {"interp_method": method, "align_corners": align_corners, "align_mode": align_mode,
             "out_d": -1, "out_h": -1, "out_w": -1, "data_layout": data_format}
    hw = [-1, -1]
    if out_shape is not None:
        if isinstance(out_shape, Variable):
            out_shape.stop_gradient = True
            inputs["OutSize"] = out_shape
        elif isinstance(out_shape, (list, tuple)):
            if len(out_shape) != 2:
                raise ValueError("image_resize: out_shape must have 2 entries for a 4-D input, got %r" % (out_shape,))
            if any(isinstance(d, Variable) for d in out_shape):
                from rill.fluid.layers.tensor import fill_constant
                for d in out_shape:
                    if isinstance(d, Variable):
                        d.stop_gradient = True
                inputs["SizeTensor"] = [d if isinstance(d, Variable) else fill_constant([1], "int32", int(d))
                                        for d in out_shape]
            for d in out_shape:
                if not isinstance(d, Variable) and int(d) <= 0:
                    raise AssertionError("image_resize: each size in out_shape must be greater than 0, got %r"
                                         % (out_shape,))
            hw = [-1 if isinstance(d, Variable) else int(d) for d in out_shape]
            attrs["out_h"], attrs["out_w"] = hw
        else:
            raise TypeError("image_resize: out_shape must be a list, tuple or Variable, got %s"
                            % type(out_shape).__name__)
    elif isinstance(scale, Variable):
        scale.stop_gradient = True
        inputs["Scale"] = scale
    elif isinstance(scale, (int, float)) and not isinstance(scale, bool):
        if scale <= 0:
            raise ValueError("image_resize: scale must be greater than 0, got %r" % (scale,))
        attrs["scale"] = float(scale)
        spatial = input.shape[1:3] if channel_last else input.shape[2:4]
        hw = [int(d * scale) if d >= 0 else -1 for d in spatial]
    else:
        raise TypeError("image_resize: scale must be a number or a Variable, got %s" % type(scale).__name__)
    if isinstance(actual_shape, Variable):
        actual_shape.stop_gradient = True
        inputs["OutSize"] = actual_shape
        hw = [-1, -1]
    elif actual_shape is not None:
        raise TypeError("image_resize: actual_shape must be a Variable or None")
    shape = list(input.shape)
    if channel_last:
        shape[1:3] = hw
    else:
        shape[2:4] = hw
    out = _tmp(helper, input.dtype, shape)
    helper.append_op(type=method + "_interp", inputs=inputs, outputs={"Out": out}, attrs=attrs)
    return out


def resize_bilinear(input, out_shape=None, scale=None, name=None, actual_shape=None, align_corners=True,
                    align_mode=1, data_format="NCHW"):
    return image_resize(input, out_shape, scale, name, "BILINEAR", actual_shape, align_corners, align_mode,
                        data_format)


def resize_nearest(input, out_shape=None, scale=None, name=None, actual_shape=None, align_corners=True,
                   data_format="NCHW"):
    return image_resize(input, out_shape, scale, name, "NEAREST", actual_shape, align_corners, 1, data_format)


def _channel_norm(op_type, input, channels, stats_shape, stats, param_attr, bias_attr, act, attrs, affine):
    """group_norm and instance_norm: Scale (1 at first) and Bias parameters of one value per
    channel where `affine` says so (a bool each), the statistics outputs, and the activation."""
    helper = LayerHelper(op_type, input=input, param_attr=param_attr, bias_attr=bias_attr, act=act)
    dtype = helper.input_dtype()
    inputs = {"X": input}
    if affine[0]:
        inputs["Scale"] = helper.create_parameter(attr=helper.param_attr, shape=[channels], dtype=dtype,
                                                  default_initializer=Constant(1.0))
    if affine[1]:
        inputs["Bias"] = helper.create_parameter(attr=helper.bias_attr, shape=[channels], dtype=dtype, is_bias=True)
    out = _tmp(helper, dtype, input.shape)
    outputs = {"Y": out}
    for name in stats:
        outputs[name] = _tmp(helper, dtype, stats_shape, stop_gradient=True)
    helper.append_op(type=op_type, inputs=inputs, outputs=outputs, attrs=attrs)
    result = helper.append_activation(out)
    result._shape = list(input.shape)
    return result


def group_norm(input, groups, epsilon=1e-05, param_attr=None, bias_attr=None, act=None, data_layout="NCHW",
               name=None):
    """As Fluid's: Scale and Bias only when param_attr and bias_attr are given."""
    check_variable_and_dtype(input, "input", ["float32", "float64"], "group_norm")
    if data_layout not in ("NCHW", "NHWC"):
        raise ValueError("group_norm: data_layout must be 'NCHW' or 'NHWC', got %r" % (data_layout,))
    channels = input.shape[1] if data_layout == "NCHW" else input.shape[-1]
    return _channel_norm("group_norm", input, channels, [input.shape[0], groups], ("Mean", "Variance"), param_attr,
                         bias_attr, act, {"groups": groups, "epsilon": epsilon, "data_layout": data_layout},
                         (bool(param_attr), bool(bias_attr)))


def instance_norm(input, epsilon=1e-05, param_attr=None, bias_attr=None, name=None):
    """As Fluid's: Scale and Bias unless param_attr (and then bias_attr) is False."""
    check_variable_and_dtype(input, "input", ["float32", "float64"], "instance_norm")
    if param_attr is False and bias_attr is not False:
        raise ValueError("instance_norm: param_attr False (no Scale) needs bias_attr False too")
    return _channel_norm("instance_norm", input, input.shape[1], [-1], ("SavedMean", "SavedVariance"), param_attr,
                         bias_attr, None, {"epsilon": epsilon}, (param_attr is not False, bias_attr is not False))


def label_smooth(label, prior_dist=None, epsilon=0.1, dtype="float32", name=None):
    """(1 - epsilon) * label + epsilon * prior_dist (uniform over the classes when None)."""
    if not 0 <= epsilon <= 1:
        raise ValueError("epsilon must be in [0, 1], got %r" % (epsilon,))
    helper = LayerHelper("label_smooth", **locals())
    out = _tmp(helper, dtype, label.shape)
    inputs = {"X": label}
    if prior_dist is not None:
        inputs["PriorDist"] = prior_dist
    helper.append_op(type="label_smooth", inputs=inputs, outputs={"Out": out}, attrs={"epsilon": float(epsilon)})
    return out


_RANDOM_DTYPES = ["float32", "float64"]


def uniform_random(shape, dtype="float32", min=-1.0, max=1.0, seed=0, name=None):
    """A tensor of `shape` (a list of ints and one-element int Variables, or a 1-D int
    Variable) of values drawn uniformly from [min, max); seed 0 draws a fresh seed each run."""
    return _random("uniform_random", shape, dtype, {"min": float(min), "max": float(max), "seed": seed}, name)


def gaussian_random(shape, mean=0.0, std=1.0, seed=0, dtype="float32", name=None):
    """A tensor of `shape` (as uniform_random takes it) of values drawn from N(mean, std^2)."""
    return _random("gaussian_random", shape, dtype, {"mean": float(mean), "std": float(std), "seed": seed}, name)


def _random(op_type, shape, dtype, attrs, name):
    check_type(shape, "shape", (list, tuple, Variable), op_type)
    check_dtype(dtype, "dtype", _RANDOM_DTYPES, op_type)
    helper = LayerHelper(op_type, name=name)
    inputs = {}
    known = int_list_argument(shape, "shape", op_type, inputs, attrs, "shape", "ShapeTensor", "ShapeTensorList")
    out = _tmp(helper, dtype, known)
    attrs["dtype"] = out.dtype
    helper.append_op(type=op_type, inputs=inputs, outputs={"Out": out}, attrs=attrs)
    return out


def uniform_random_batch_size_like(input, shape, dtype="float32", input_dim_idx=0, output_dim_idx=0, min=-1.0,
                                   max=1.0, seed=0):
    """A tensor of `shape`, its dim output_dim_idx replaced by input's dim input_dim_idx, of
    values drawn uniformly from [min, max)."""
    return _random_like("uniform_random_batch_size_like", input, shape, dtype, input_dim_idx, output_dim_idx,
                        {"min": float(min), "max": float(max), "seed": seed})


def gaussian_random_batch_size_like(input, shape, input_dim_idx=0, output_dim_idx=0, mean=0.0, std=1.0, seed=0,
                                    dtype="float32"):
    """A tensor of `shape`, its dim output_dim_idx replaced by input's dim input_dim_idx, of
    values drawn from N(mean, std^2)."""
    return _random_like("gaussian_random_batch_size_like", input, shape, dtype, input_dim_idx, output_dim_idx,
                        {"mean": float(mean), "std": float(std), "seed": seed})


def _random_like(op_type, input, shape, dtype, input_dim_idx, output_dim_idx, attrs):
    check_variable_and_dtype(input, "input", ["float16", "float32", "float64"], op_type)
    check_type(shape, "shape", (list, tuple), op_type)
    check_dtype(dtype, "dtype", _RANDOM_DTYPES, op_type)
    helper = LayerHelper(op_type, input=input)
    out_shape = [int(d) for d in shape]
    out_shape[output_dim_idx] = input.shape[input_dim_idx]
    out = _tmp(helper, dtype, out_shape)
    attrs.update(shape=[int(d) for d in shape], input_dim_idx=input_dim_idx, output_dim_idx=output_dim_idx,
                 dtype=out.dtype)
    helper.append_op(type=op_type, inputs={"Input": input}, outputs={"Out": out}, attrs=attrs)
    return out


def crop(x, shape=None, offsets=None, name=None):
    """The box of x at offsets (default: x's first element) with shape's dims: a list (a
    first -1 keeps x's batch) or a Variable whose dims the crop takes."""
    check_variable_and_dtype(x, "x", ["float32", "float64"], "crop")
    check_type(shape, "shape", (list, tuple, Variable), "crop")
    helper = LayerHelper("crop", **locals())
    inputs, attrs = {"X": x}, {}
    if isinstance(shape, Variable):
        inputs["Y"] = shape
        out_shape = shape.shape
    else:
        attrs["shape"] = [int(d) for d in shape]
        out_shape = attrs["shape"]
    if isinstance(offsets, Variable):
        inputs["Offsets"] = offsets
    else:
        attrs["offsets"] = [0] * len(x.shape) if offsets is None else [int(o) for o in offsets]
    out = _tmp(helper, x.dtype, out_shape)
    helper.append_op(type="crop", inputs=inputs, outputs={"Out": out}, attrs=attrs)
    return out


def l2_normalize(x, axis, epsilon=1e-12, name=None):
    """x divided by its L2 norm along axis (sqrt(sum(x^2) + epsilon)); axis 0 for a 1-D x."""
    check_variable_and_dtype(x, "X", ["float32", "float64"], "norm")
    if len(x.shape) == 1:
        axis = 0
    helper = LayerHelper("l2_normalize", **locals())
    out = _tmp(helper, x.dtype, x.shape)
    norm = _tmp(helper, x.dtype, stop_gradient=True)
    helper.append_op(type="norm", inputs={"X": x}, outputs={"Out": out, "Norm": norm},
                     attrs={"axis": 1 if axis is None else axis, "epsilon": float(epsilon)})
    return out


def lrn(input, n=5, k=1.0, alpha=1e-4, beta=0.75, name=None, data_format="NCHW"):
    """Local response normalization across channels: input / (k + alpha * the sum of the
    squares of the n channels around each)^beta."""
    check_variable_and_dtype(input, "input", ["float32", "float64"], "lrn")
    if len(input.shape) != 4:
        raise ValueError("Input's dimension size of Op(lrn) must be 4, but received %d." % len(input.shape))
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError("Attr(data_format) of Op(lrn) got wrong value: received %s but only NCHW or NHWC "
                         "supported." % data_format)
    helper = LayerHelper("lrn", **locals())
    mid = _tmp(helper, input.dtype, input.shape, stop_gradient=True)
    out = _tmp(helper, input.dtype, input.shape)
    helper.append_op(type="lrn", inputs={"X": input}, outputs={"Out": out, "MidOut": mid},
                     attrs={"n": n, "k": float(k), "alpha": float(alpha), "beta": float(beta),
                            "data_format": data_format})
    return out


def maxout(x, groups, name=None, axis=1):
    """The maximum over each group of `groups` consecutive channels (at axis 1, or 3/-1 for NHWC)."""
    check_variable_and_dtype(x, "x", ["float32", "float64"], "maxout")
    if axis not in (1, -1, 3):
        raise ValueError("Attr(axis) should be 1 when data format is NCHW, -1 or 3 when data format is NHWC. "
                         "Received Attr(axis): %s." % axis)
    helper = LayerHelper("maxout", **locals())
    shape = list(x.shape)
    a = 1 if axis == 1 else 3
    if len(shape) == 4 and shape[a] > 0:
        shape[a] //= groups
    out = _tmp(helper, x.dtype, shape)
    helper.append_op(type="maxout", inputs={"X": x}, outputs={"Out": out}, attrs={"groups": groups, "axis": axis})
    return out


def multiplex(inputs, index, name=None):
    """Row i of the result is row i of inputs[index[i]]."""
    check_type(inputs, "inputs", (list,), "multiplex")
    if len(inputs) < 2:
        raise ValueError("inputs should be a list object with at least 2 elements.")
    for i, x in enumerate(inputs):
        check_variable_and_dtype(x, "input[%d]" % i, ["float32", "float64", "int32", "int64"], "multiplex")
    check_variable_and_dtype(index, "index", ["int32", "int64"], "multiplex")
    helper = LayerHelper("multiplex", **locals())
    out = _tmp(helper, inputs[0].dtype, inputs[0].shape)
    helper.append_op(type="multiplex", inputs={"X": inputs, "Ids": index}, outputs={"Out": out})
    return out


def smooth_l1(x, y, inside_weight=None, outside_weight=None, sigma=None):
    """Each row's smooth L1 loss between x and y ([N, 1]), the weights optional (both or neither)."""
    check_variable_and_dtype(x, "X", ["float32", "float64"], "smooth_l1_loss")
    check_variable_and_dtype(y, "Y", ["float32", "float64"], "smooth_l1_loss")
    helper = LayerHelper("smooth_l1_loss", **locals())
    diff = _tmp(helper, x.dtype, x.shape, stop_gradient=True)
    loss = _tmp(helper, x.dtype, [x.shape[0], 1])
    inputs = {"X": x, "Y": y}
    if inside_weight is not None:
        inputs["InsideWeight"] = inside_weight
    if outside_weight is not None:
        inputs["OutsideWeight"] = outside_weight
    helper.append_op(type="smooth_l1_loss", inputs=inputs, outputs={"Diff": diff, "Out": loss},
                     attrs={"sigma": 1.0 if sigma is None else float(sigma)})
    return loss


def mean_iou(input, label, num_classes):
    """The mean IoU of a segmentation over its classes: (mean_iou [1], wrong and correct
    counts [num_classes] each)."""
    check_variable_and_dtype(input, "Predictions", ["int32", "int64"], "mean_iou")
    check_variable_and_dtype(label, "Labels", ["int32", "int64"], "mean_iou")
    helper = LayerHelper("mean_iou", **locals())
    mean = _tmp(helper, "float32", [1], stop_gradient=True)
    wrong = _tmp(helper, "int32", [num_classes], stop_gradient=True)
    correct = _tmp(helper, "int32", [num_classes], stop_gradient=True)
    helper.append_op(type="mean_iou", inputs={"Predictions": input, "Labels": label},
                     outputs={"OutMeanIou": mean, "OutWrong": wrong, "OutCorrect": correct},
                     attrs={"num_classes": num_classes})
    return mean, wrong, correct


def scatter(input, index, updates, name=None, overwrite=True):
    """Fluid 1.x's: input with its rows at `index` taken from updates' rows (the last update
    of a row with overwrite, else the sum of its updates)."""
    helper = LayerHelper("scatter", **locals())
    out = _tmp(helper, helper.input_dtype(), input.shape)
    helper.append_op(type="scatter", inputs={"X": input, "Ids": index, "Updates": updates}, outputs={"Out": out},
                     attrs={"overwrite": overwrite})
    return out
