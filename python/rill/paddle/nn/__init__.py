"""paddle.nn: Paddle 2.x's layers as objects (static graph): a layer built once makes its
parameters then (in the startup and main programs, as Fluid's layers do) and appends its
ops each time it is called."""
from rill.fluid import initializer as _initializer
from rill.fluid.clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue  # noqa: F401
from rill.paddle import _op
from rill.paddle.nn import conv, functional, initializer  # noqa: F401
from rill.paddle.nn.conv import Conv2D, Conv2DTranspose  # noqa: F401
from rill.paddle.nn.layer import Layer
from rill.paddle.nn import functional as F

__all__ = ["Layer", "Linear", "Embedding", "PReLU", "Dropout", "Dropout2D", "Dropout3D", "AlphaDropout", "Pad1D",
           "Pad2D", "Pad3D", "Softmax", "LogSoftmax", "Conv2D", "Conv2DTranspose", "LocalResponseNorm",
           "ClipGradByGlobalNorm", "ClipGradByNorm", "ClipGradByValue"]


def _activation_layer(class_name, function, arguments=()):
    """A Layer class calling F.`function` with its constructor's `arguments` ((name,
    default) pairs, in order) and `name`."""
    def __init__(self, *args, **kwargs):
        Layer.__init__(self)
        names = [a for a, _ in arguments]
        if len(args) > len(names) + 1:
            raise TypeError("%s takes %s and name" % (class_name, ", ".join(names) or "no arguments"))
        values = dict(arguments)
        values["name"] = None
        values.update(zip(names + ["name"], args))
        for key, value in kwargs.items():
            if key not in values:
                raise TypeError("%s got an unexpected argument '%s'" % (class_name, key))
            values[key] = value
        self._arguments = values

    def forward(self, x):
        return function(x, **self._arguments)
    return type(class_name, (Layer,), {"__init__": __init__, "forward": forward,
                                       "__doc__": "Layer form of nn.functional.%s." % function.__name__})


_ACTIVATION_LAYERS = {
    "ReLU": (F.relu, ()), "ReLU6": (F.relu6, ()), "ELU": (F.elu, (("alpha", 1.0),)),
    "GELU": (F.gelu, (("approximate", False),)), "Hardshrink": (F.hardshrink, (("threshold", 0.5),)),
    "Hardtanh": (F.hardtanh, (("min", -1.0), ("max", 1.0))), "Hardsigmoid": (F.hardsigmoid, ()),
    "Hardswish": (F.hardswish, ()), "LeakyReLU": (F.leaky_relu, (("negative_slope", 0.01),)),
    "LogSigmoid": (F.log_sigmoid, ()), "Maxout": (F.maxout, (("groups", None), ("axis", 1))),
    "SELU": (F.selu, (("scale", 1.0507009873554804934193349852946), ("alpha", 1.6732632423543772848170429916717))),
    "Silu": (F.silu, ()), "Sigmoid": (F.sigmoid, ()), "Softplus": (F.softplus, (("beta", 1), ("threshold", 20))),
    "Softshrink": (F.softshrink, (("threshold", 0.5),)), "Softsign": (F.softsign, ()), "Swish": (F.swish, ()),
    "Tanh": (F.tanh, ()), "Tanhshrink": (F.tanhshrink, ()), "ThresholdedReLU": (F.thresholded_relu,
                                                                             (("threshold", 1.0),)),
    "Softmax": (F.softmax, (("axis", -1),)), "LogSoftmax": (F.log_softmax, (("axis", -1),)),
    "LocalResponseNorm": (F.local_response_norm, (("size", None), ("alpha", 1e-4), ("beta", 0.75), ("k", 1.0),
                                                  ("data_format", "NCHW"))),
}
for _name, (_function, _arguments) in _ACTIVATION_LAYERS.items():
    globals()[_name] = _activation_layer(_name, _function, _arguments)
__all__ += [n for n in _ACTIVATION_LAYERS if n not in __all__]


class Linear(Layer):
    """y = x W + b, W [in_features, out_features] (Xavier-initialized unless weight_attr
    says otherwise), b [out_features] (zeros; bias_attr=False for none)."""

    def __init__(self, in_features, out_features, weight_attr=None, bias_attr=None, name=None):
        Layer.__init__(self, "linear")
        self.weight = self.create_parameter([in_features, out_features], weight_attr)
        self.bias = self.create_parameter([out_features], bias_attr, is_bias=True)
        self._name = name

    def forward(self, x):
        out = _op.append("matmul", {"X": x, "Y": self.weight},
                         {"transpose_X": False, "transpose_Y": False, "alpha": 1.0}, name=self._name, layer="linear")
        if self.bias is None:
            return out
        return _op.append("elementwise_add", {"X": out, "Y": self.bias}, {"axis": len(x.shape) - 1},
                          name=self._name, layer="linear")


class Embedding(Layer):
    """The rows of a [num_embeddings, embedding_dim] table at the given ids (padding_idx's
    row reads as zeros; sparse: its gradient is SelectedRows)."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, sparse=False, weight_attr=None, name=None):
        Layer.__init__(self, "embedding")
        if padding_idx is not None and not -num_embeddings <= padding_idx < num_embeddings:
            raise ValueError("padding_idx must be within [-{}, {})".format(num_embeddings, num_embeddings))
        self._padding_idx, self._sparse = padding_idx, sparse
        self.weight = self.create_parameter([num_embeddings, embedding_dim], weight_attr)
        self._name = name

    def forward(self, x):
        return F.embedding(x, self.weight, self._padding_idx, self._sparse, self._name)


class PReLU(Layer):
    """F.prelu with its own weight: num_parameters 1 (one slope) or the channel count."""

    def __init__(self, num_parameters=1, init=0.25, weight_attr=None, name=None):
        Layer.__init__(self, "prelu")
        self.weight = self.create_parameter([num_parameters], weight_attr,
                                            default_initializer=_initializer.Constant(init))
        self._name = name

    def forward(self, x):
        return F.prelu(x, self.weight, self._name)


class Dropout(Layer):
    def __init__(self, p=0.5, axis=None, mode="upscale_in_train", name=None):
        Layer.__init__(self, "dropout")
        self.p, self.axis, self.mode, self._name = p, axis, mode, name

    def forward(self, x):
        return F.dropout(x, p=self.p, axis=self.axis, training=self.training, mode=self.mode, name=self._name)


class Dropout2D(Layer):
    def __init__(self, p=0.5, data_format="NCHW", name=None):
        Layer.__init__(self, "dropout2d")
        self.p, self.data_format, self._name = p, data_format, name

    def forward(self, x):
        return F.dropout2d(x, p=self.p, training=self.training, data_format=self.data_format, name=self._name)


class Dropout3D(Layer):
    def __init__(self, p=0.5, data_format="NCDHW", name=None):
        Layer.__init__(self, "dropout3d")
        self.p, self.data_format, self._name = p, data_format, name

    def forward(self, x):
        return F.dropout3d(x, p=self.p, training=self.training, data_format=self.data_format, name=self._name)


class AlphaDropout(Layer):
    def __init__(self, p=0.5, name=None):
        Layer.__init__(self, "alphadropout")
        self.p, self._name = p, name

    def forward(self, x):
        return F.alpha_dropout(x, p=self.p, training=self.training, name=self._name)


def _pad_layer(class_name, rank, default_format):
    """A Layer padding the spatial dims of a `rank`-D input: `padding` an int (every side)
    or a list of 2 * (rank - 2) amounts."""
    def __init__(self, padding, mode="constant", value=0.0, data_format=default_format, name=None):
        Layer.__init__(self, class_name.lower())
        self._pad = [padding] * (2 * (rank - 2)) if isinstance(padding, int) else padding
        self._mode, self._value, self._format, self._name = mode, value, data_format, name

    def forward(self, x):
        return F.pad(x, self._pad, mode=self._mode, value=self._value, data_format=self._format, name=self._name)
    return type(class_name, (Layer,), {"__init__": __init__, "forward": forward})


Pad1D = _pad_layer("Pad1D", 3, "NCL")
Pad2D = _pad_layer("Pad2D", 4, "NCHW")
Pad3D = _pad_layer("Pad3D", 5, "NCDHW")
