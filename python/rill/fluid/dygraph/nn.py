"""fluid.dygraph's layer objects (Fluid 1.x): Linear, Pool2D, BatchNorm, InstanceNorm,
LayerNorm, Dropout and Embedding, each making its parameters once and appending its op at
each call, in dygraph mode or static."""
from rill.fluid import layers
from rill.fluid.dygraph.layers import Layer
from rill.fluid.initializer import Constant
from rill.fluid.layers.checks import check_variable_and_dtype
from rill.fluid.layers.nn import _prod, _tmp
from rill.fluid.param_attr import ParamAttr

__all__ = ["Linear", "Pool2D", "BatchNorm", "InstanceNorm", "LayerNorm", "Dropout", "Embedding"]

_FLOATS = ["float16", "float32", "float64"]


def _affine(input, scale, bias):
    """A normalization op's inputs: X, and Scale and Bias where the layer has them."""
    inputs = {"X": input}
    if scale is not None:
        inputs["Scale"] = scale
    if bias is not None:
        inputs["Bias"] = bias
    return inputs


class Linear(Layer):
    """input W + b, W [input_dim, output_dim], then `act`."""

    def __init__(self, input_dim, output_dim, param_attr=None, bias_attr=None, act=None, dtype="float32"):
        Layer.__init__(self, "linear", dtype)
        self.weight = self.create_parameter([input_dim, output_dim], param_attr)
        self.bias = self.create_parameter([output_dim], bias_attr, is_bias=True)
        self._act = act

    def forward(self, input):
        check_variable_and_dtype(input, "input", _FLOATS, "Linear")
        shape = list(input.shape[:-1]) + [self.weight.shape[1]]
        out = _tmp(self._helper, input.dtype, shape)
        self._helper.append_op(type="matmul", inputs={"X": input, "Y": self.weight}, outputs={"Out": out},
                               attrs={"transpose_X": False, "transpose_Y": False, "alpha": 1.0})
        if self.bias is not None:
            biased = _tmp(self._helper, input.dtype, shape)
            self._helper.append_op(type="elementwise_add", inputs={"X": out, "Y": self.bias},
                                   outputs={"Out": biased}, attrs={"axis": len(input.shape) - 1})
            out = biased
        return getattr(layers, self._act)(out) if self._act else out


class Pool2D(Layer):
    """fluid.layers.pool2d with its arguments fixed at construction (pool_type and
    data_format in either case)."""

    def __init__(self, pool_size=-1, pool_type="max", pool_stride=1, pool_padding=0, global_pooling=False,
                 use_cudnn=True, ceil_mode=False, exclusive=True, data_format="NCHW"):
        Layer.__init__(self, "pool2d")
        data_format = data_format.upper()
        if data_format not in ("NCHW", "NHWC"):
            raise ValueError("Attr(data_format) should be 'NCHW' or 'NHWC'. Received Attr(data_format): %s." %
                             data_format)
        self._arguments = dict(pool_size=pool_size, pool_type=pool_type.lower(), pool_stride=pool_stride,
                               pool_padding=pool_padding, global_pooling=global_pooling, use_cudnn=use_cudnn,
                               ceil_mode=ceil_mode, exclusive=exclusive, data_format=data_format)

    def forward(self, input):
        return layers.pool2d(input, **self._arguments)


class BatchNorm(Layer):
    """Batch normalization with its scale, bias and running statistics; in training (not
    is_test) the batch's statistics normalize and update the running ones, and so with
    is_test and trainable_statistics."""

    def __init__(self, num_channels, act=None, is_test=False, momentum=0.9, epsilon=1e-05, param_attr=None,
                 bias_attr=None, dtype="float32", data_layout="NCHW", in_place=False, moving_mean_name=None,
                 moving_variance_name=None, do_model_average_for_mean_and_var=True, use_global_stats=False,
                 trainable_statistics=False):
        Layer.__init__(self, "batch_norm", dtype)
        if dtype == "float16":
            dtype = "float32"  # the statistics of an fp16 input are fp32, as the kernels take them
        shape = [num_channels]
        self.weight = self.create_parameter(shape, param_attr, dtype, default_initializer=Constant(1.0))
        self.bias = self.create_parameter(shape, bias_attr, dtype, is_bias=True)
        self._mean = self.create_parameter(shape, ParamAttr(name=moving_mean_name, initializer=Constant(0.0),
                                                            trainable=False), dtype)
        self._variance = self.create_parameter(
            shape, ParamAttr(name=moving_variance_name, initializer=Constant(1.0), trainable=False), dtype)
        self._mean.stop_gradient = self._variance.stop_gradient = True
        self._act, self._in_place, self._dtype_of_stats = act, in_place, dtype
        self._attrs = {"momentum": momentum, "epsilon": epsilon, "is_test": is_test, "data_layout": data_layout,
                       "use_global_stats": use_global_stats, "trainable_statistics": trainable_statistics}

    def forward(self, input):
        check_variable_and_dtype(input, "input", _FLOATS, "BatchNorm")
        saved = [_tmp(self._helper, self._dtype_of_stats, self._mean.shape, stop_gradient=True) for _ in range(2)]
        out = input if self._in_place else _tmp(self._helper, input.dtype, input.shape)
        self._helper.append_op(
            type="batch_norm",
            inputs={"X": input, "Scale": self.weight, "Bias": self.bias, "Mean": self._mean,
                    "Variance": self._variance},
            outputs={"Y": out, "MeanOut": self._mean, "VarianceOut": self._variance, "SavedMean": saved[0],
                     "SavedVariance": saved[1]},
            attrs=self._attrs)
        return getattr(layers, self._act)(out) if self._act else out


class InstanceNorm(Layer):
    """Each sample's channel normalized by its own mean and variance, then scaled and
    shifted per channel (param_attr / bias_attr False: neither)."""

    def __init__(self, num_channels, epsilon=1e-05, param_attr=None, bias_attr=None, dtype="float32"):
        Layer.__init__(self, "instance_norm", dtype)
        self.scale = self.create_parameter([num_channels], param_attr, default_initializer=Constant(1.0))
        self.bias = self.create_parameter([num_channels], bias_attr, is_bias=True)
        self._epsilon = epsilon

    def forward(self, input):
        check_variable_and_dtype(input, "input", ["float32", "float64"], "InstanceNorm")
        inputs = _affine(input, self.scale, self.bias)
        out = _tmp(self._helper, input.dtype, input.shape)
        saved = [_tmp(self._helper, input.dtype, [-1]) for _ in range(2)]
        self._helper.append_op(type="instance_norm", inputs=inputs,
                               outputs={"Y": out, "SavedMean": saved[0], "SavedVariance": saved[1]},
                               attrs={"epsilon": self._epsilon})
        return out


class LayerNorm(Layer):
    """Each sample normalized over its last dims (`normalized_shape`), then scaled and
    shifted elementwise over them."""

    def __init__(self, normalized_shape, scale=True, shift=True, epsilon=1e-05, param_attr=None, bias_attr=None,
                 act=None, dtype="float32"):
        Layer.__init__(self, "layer_norm", dtype)
        self._normalized = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
        size = _prod(self._normalized)
        self.weight = self.create_parameter([size], param_attr, default_initializer=Constant(1.0)) if scale else None
        self.bias = self.create_parameter([size], bias_attr, is_bias=True) if shift else None
        self._epsilon, self._act = epsilon, act

    def forward(self, input):
        check_variable_and_dtype(input, "input", ["float32", "float64"], "LayerNorm")
        begin = len(input.shape) - len(self._normalized)
        if list(input.shape[begin:]) != self._normalized:
            raise ValueError("LayerNorm: the last dims of input %s are not normalized_shape %s" %
                             (list(input.shape), self._normalized))
        inputs = _affine(input, self.weight, self.bias)
        out = _tmp(self._helper, input.dtype, input.shape)
        stats = [_tmp(self._helper, input.dtype, [-1]) for _ in range(2)]
        self._helper.append_op(type="layer_norm", inputs=inputs,
                               outputs={"Y": out, "Mean": stats[0], "Variance": stats[1]},
                               attrs={"epsilon": self._epsilon, "begin_norm_axis": begin})
        return getattr(layers, self._act)(out) if self._act else out


class Dropout(Layer):
    """Elements zeroed with probability p in training (train()); downgrade_in_infer scales by
    1 - p at inference (eval() or is_test), upscale_in_train by 1 / (1 - p) in training."""

    def __init__(self, p=0.5, seed=None, dropout_implementation="downgrade_in_infer", is_test=False):
        Layer.__init__(self, "dropout")
        if dropout_implementation not in ("downgrade_in_infer", "upscale_in_train"):
            raise ValueError("dropout_implementation must be downgrade_in_infer or upscale_in_train, got %r" %
                             (dropout_implementation,))
        self._p, self._seed, self._implementation, self._is_test = p, seed, dropout_implementation, is_test

    def forward(self, input):
        check_variable_and_dtype(input, "x", _FLOATS, "dropout")
        out = _tmp(self._helper, input.dtype, input.shape)
        mask = _tmp(self._helper, "uint8", input.shape, stop_gradient=True)
        self._helper.append_op(
            type="dropout", inputs={"X": input}, outputs={"Out": out, "Mask": mask},
            attrs={"dropout_prob": float(self._p), "is_test": self._is_test or not self.training,
                   "fix_seed": self._seed is not None, "seed": self._seed or 0,
                   "dropout_implementation": self._implementation})
        return out


class Embedding(Layer):
    """The rows of a [size[0], size[1]] table at int64 ids (padding_idx's row reads as
    zeros; is_sparse: its gradient is SelectedRows)."""

    def __init__(self, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None,
                 dtype="float32"):
        Layer.__init__(self, "embedding", dtype)
        self._size = list(size)
        self._padding_idx = -1 if padding_idx is None else padding_idx % size[0]
        self._is_sparse, self._is_distributed = bool(is_sparse), bool(is_distributed)
        self.weight = self.create_parameter(self._size, param_attr)

    def forward(self, input):
        check_variable_and_dtype(input, "input", ["int64"], "Embedding")
        out = _tmp(self._helper, self.weight.dtype, list(input.shape) + [self._size[1]])
        self._helper.append_op(type="lookup_table_v2", inputs={"Ids": input, "W": self.weight},
                               outputs={"Out": out},
                               attrs={"is_sparse": self._is_sparse, "is_distributed": self._is_distributed,
                                      "padding_idx": self._padding_idx})
        return out
