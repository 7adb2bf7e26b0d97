"""Paddle 2.x's 2-D convolutions: F.conv2d and F.conv2d_transpose (the conv2d and
conv2d_transpose ops, depthwise where each input channel has its own filters, as Paddle
picks them) and the Conv2D and Conv2DTranspose layers that hold their weights."""
from rill.fluid import initializer
from rill.fluid.layers import nn as fluid_nn
from rill.paddle import _op
from rill.paddle.nn.layer import Layer

__all__ = ["conv2d", "conv2d_transpose", "Conv2D", "Conv2DTranspose"]


def _spatial(x, data_format, fn):
    channel_last = fluid_nn._layout(data_format, fn)
    if len(x.shape) != 4:
        raise ValueError("%s: x must be 4-D (%s), has shape %s" % (fn, data_format, list(x.shape)))
    return channel_last, x.shape[3 if channel_last else 1], (x.shape[1:3] if channel_last else x.shape[2:4])


def _with_bias(out, bias, channel_last, name, fn):
    if bias is None:
        return out
    return _op.append("elementwise_add", {"X": out, "Y": bias}, {"axis": 3 if channel_last else 1}, shape=out.shape,
                      name=name, layer=fn)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCHW", name=None):
    """x convolved with weight [out_channels, in_channels / groups, kh, kw], plus bias
    [out_channels]; padding an int, 2 or 4 ints, pairs per dim, "SAME" or "VALID"."""
    _op.check_variable(x, "x", "conv2d", _op.FLOATS)
    channel_last, channels, hw = _spatial(x, data_format, "conv2d")
    if channels > 0 and channels % groups:
        raise ValueError("conv2d: %d input channels are not divisible by groups=%d" % (channels, groups))
    filters = weight.shape[0]
    op_type = "depthwise_conv2d" if channels == groups and filters % channels == 0 else "conv2d"
    stride, dilation = fluid_nn._pair(stride, "stride"), fluid_nn._pair(dilation, "dilation")
    pads, algorithm = fluid_nn._image_padding(padding, channel_last, "conv2d")
    four = pads if len(pads) == 4 else [pads[0], pads[0], pads[1], pads[1]]
    sizes = [fluid_nn._out_size(hw[i], weight.shape[2 + i], stride[i], four[2 * i:2 * i + 2],
                                1 if algorithm == "SAME" else dilation[i], algorithm) for i in range(2)]
    shape = [x.shape[0]] + (sizes + [filters] if channel_last else [filters] + sizes)
    out = _op.append(op_type, {"Input": x, "Filter": weight},
                     {"strides": stride, "paddings": pads, "dilations": dilation, "groups": groups,
                      "padding_algorithm": algorithm, "data_format": data_format},
                     shape=shape, name=name, layer="conv2d", outputs=("Output",))
    return _with_bias(out, bias, channel_last, name, "conv2d")


def conv2d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, dilation=1, groups=1,
                     output_size=None, data_format="NCHW", name=None):
    """The transposed convolution of x with weight [in_channels, out_channels / groups, kh,
    kw], plus bias; output_padding (less than the stride) or output_size picks among the
    output sizes the stride allows."""
    _op.check_variable(x, "x", "conv2d_transpose", _op.FLOATS)
    channel_last, channels, hw = _spatial(x, data_format, "conv2d_transpose")
    op_type = "depthwise_conv2d_transpose" if channels == groups and weight.shape[1] == 1 else "conv2d_transpose"
    stride, dilation = fluid_nn._pair(stride, "stride"), fluid_nn._pair(dilation, "dilation")
    pads, algorithm = fluid_nn._image_padding(padding, channel_last, "conv2d_transpose")
    attrs = {"strides": stride, "paddings": pads, "dilations": dilation, "groups": groups,
             "padding_algorithm": algorithm, "data_format": data_format,
             "output_padding": [] if output_padding == 0 else fluid_nn._pair(output_padding, "output_padding")}
    if output_size is not None:
        if output_padding != 0:
            raise ValueError("conv2d_transpose: give output_padding or output_size, not both")
        attrs["output_size"] = fluid_nn._pair(output_size, "output_size")
    out = _op.append(op_type, {"Input": x, "Filter": weight}, attrs, name=name, layer="conv2d_transpose",
                     outputs=("Output",))
    return _with_bias(out, bias, channel_last, name, "conv2d_transpose")


class _Conv(Layer):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, weight_attr,
                 bias_attr, data_format, transposed):
        Layer.__init__(self, "conv2d_transpose" if transposed else "conv2d")
        if in_channels % groups or out_channels % groups:
            raise ValueError("in_channels (%d) and out_channels (%d) must be divisible by groups (%d)" %
                             (in_channels, out_channels, groups))
        kernel = fluid_nn._pair(kernel_size, "kernel_size")
        shape = ([in_channels, out_channels // groups] if transposed else
                 [out_channels, in_channels // groups]) + kernel
        # Paddle's defaults: Xavier for a transposed convolution, else N(0, 2 / fan_in).
        default = None if transposed else initializer.Normal(0.0, (2.0 / (kernel[0] * kernel[1] *
                                                                         in_channels)) ** 0.5)
        self.weight = self.create_parameter(shape, weight_attr, default_initializer=default)
        self.bias = self.create_parameter([out_channels], bias_attr, is_bias=True)
        self._arguments = dict(stride=stride, padding=padding, dilation=dilation, groups=groups,
                               data_format=data_format)


class Conv2D(_Conv):
    """conv2d with its own weight [out_channels, in_channels / groups, kh, kw] and bias;
    padding_mode "reflect", "replicate" or "circular" pads x so before a convolution
    without padding."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 padding_mode="zeros", weight_attr=None, bias_attr=None, data_format="NCHW"):
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError("padding_mode must be one of zeros, reflect, replicate, circular, got %r" %
                             (padding_mode,))
        _Conv.__init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                       weight_attr, bias_attr, data_format, False)
        self._pad_first = None
        if padding_mode != "zeros":
            h, w = fluid_nn._pair(padding, "padding")
            self._pad_first = ([w, w, h, h], padding_mode)
            self._arguments["padding"] = 0

    def forward(self, x):
        if self._pad_first is not None:
            from rill.paddle.nn.functional import pad  # functional imports this module
            x = pad(x, self._pad_first[0], mode=self._pad_first[1], data_format=self._arguments["data_format"])
        return conv2d(x, self.weight, self.bias, **self._arguments)


class Conv2DTranspose(_Conv):
    """conv2d_transpose with its own weight [in_channels, out_channels / groups, kh, kw]
    and bias."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 dilation=1, weight_attr=None, bias_attr=None, data_format="NCHW"):
        _Conv.__init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                       weight_attr, bias_attr, data_format, True)
        self._arguments["output_padding"] = output_padding

    def forward(self, x, output_size=None):
        return conv2d_transpose(x, self.weight, self.bias, output_size=output_size, **self._arguments)
