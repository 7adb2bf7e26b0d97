"""fluid.layers.ops: one layer per activation op (X -> Out), as Fluid generated them."""
from rill.fluid import core
from rill.fluid.layer_helper import LayerHelper

_ACTIVATIONS = ["sigmoid", "relu", "tanh", "exp", "log", "sqrt", "abs", "square", "erf", "gelu", "swish", "hard_swish",
                "hard_sigmoid", "logsigmoid", "tanh_shrink", "softshrink", "ceil", "floor", "cos", "sin", "round",
                "tan", "asin", "acos", "atan", "sinh", "cosh",
                "reciprocal", "softplus", "softsign", "brelu", "soft_relu", "elu", "pow", "stanh", "hard_shrink",
                "thresholded_relu", "silu", "mish", "selu", "rsqrt", "expm1", "log1p", "log2", "log10", "sign"]

__all__ = list(_ACTIVATIONS)


# The attributes Fluid's layer takes positionally after x, in order (then `name`), for the
# activations that have any; a value of None leaves the op's default.
_POSITIONAL_ATTRS = {"stanh": ("scale_a", "scale_b"), "softshrink": ("alpha",), "thresholded_relu": ("threshold",),
                     "hard_shrink": ("threshold",), "brelu": ("t_min", "t_max"), "soft_relu": ("threshold",),
                     "elu": ("alpha",), "pow": ("factor",), "hard_sigmoid": ("slope", "offset"), "swish": ("beta",),
                     "selu": ("scale", "alpha"), "mish": ("threshold",), "gelu": ("approximate",),
                     "hard_swish": ("threshold", "scale", "offset")}
# A layer argument named otherwise than the op's attribute (Python cannot name one `lambda`).
_ATTR_OF_ARGUMENT = {("softshrink", "alpha"): "lambda"}


def _make(op_type):
    positional = _POSITIONAL_ATTRS.get(op_type, ())

    def layer(x, *args, **attrs):
        if len(args) > len(positional) + 1:
            raise TypeError("%s takes x, %s and name; got %d more arguments"
                            % (op_type, ", ".join(positional) or "no attributes", len(args)))
        for attr, value in zip(positional + ("name",), args):
            if attr in attrs:
                raise TypeError("%s got '%s' twice" % (op_type, attr))
            attrs[attr] = value
        name = attrs.pop("name", None)
        # Every numeric attribute of these ops is a FLOAT (pow(x, factor=2) as Fluid takes it).
        attrs = {_ATTR_OF_ARGUMENT.get((op_type, k), k): float(v) if isinstance(v, int) and not isinstance(v, bool)
                 else v for k, v in attrs.items() if v is not None}
        helper = LayerHelper(op_type, x=x, name=name)
        out = helper.create_tmp_variable(dtype=x.dtype)
        out._shape = list(x.shape)
        helper.append_op(type=op_type, inputs={"X": x}, outputs={"Out": out}, attrs=attrs)
        return out

    layer.__name__ = op_type
    layer.__doc__ = "Out = %s(X), elementwise%s." % (
        op_type, "; takes x, %s, name" % ", ".join(positional) if positional else "")
    return layer


for _op in _ACTIVATIONS:
    globals()[_op] = _make(_op)


def pow(x, factor=1.0, name=None):
    """Out = X ^ factor, elementwise; `factor` a number or a one-element fp32 Variable (the op's
    FactorTensor, as Fluid takes it; another dtype is a TypeError)."""
    from rill.fluid.framework import Variable
    if not isinstance(factor, Variable):
        return _make("pow")(x, name=name, factor=factor)
    if factor.dtype != core.VarDesc.VarType.FP32:
        raise TypeError("pow: factor must be a float32 Variable, got %s" % factor.dtype)
    helper = LayerHelper("pow", x=x, name=name)
    out = helper.create_tmp_variable(dtype=x.dtype)
    out._shape = list(x.shape)
    helper.append_op(type="pow", inputs={"X": x, "FactorTensor": factor}, outputs={"Out": out})
    return out
