"""fluid.layers.ops: one layer per activation op (X -> Out), as Fluid generated them."""
from rill.fluid.layer_helper import LayerHelper

_ACTIVATIONS = ["sigmoid", "relu", "tanh", "exp", "log", "sqrt", "abs", "square", "gelu", "swish", "hard_swish",
                "hard_sigmoid", "logsigmoid", "tanh_shrink", "softshrink", "ceil", "floor", "cos", "sin", "round",
                "tan", "asin", "acos", "atan", "sinh", "cosh",
                "reciprocal", "softplus", "softsign", "brelu", "soft_relu", "elu", "pow", "stanh", "hard_shrink",
                "thresholded_relu", "silu", "mish", "selu", "rsqrt", "expm1", "log1p", "log2", "log10", "sign"]

__all__ = list(_ACTIVATIONS)


def _make(op_type):
    def layer(x, name=None, **attrs):
        # Every numeric attribute of these ops is a FLOAT (pow(x, factor=2) as Fluid takes it).
        attrs = {k: float(v) if isinstance(v, int) and not isinstance(v, bool) else v for k, v in attrs.items()}
        helper = LayerHelper(op_type, x=x, name=name)
        out = helper.create_tmp_variable(dtype=x.dtype)
        out._shape = list(x.shape)
        helper.append_op(type=op_type, inputs={"X": x}, outputs={"Out": out}, attrs=attrs)
        return out

    layer.__name__ = op_type
    layer.__doc__ = "Out = %s(X), elementwise." % op_type
    return layer


for _op in _ACTIVATIONS:
    globals()[_op] = _make(_op)
