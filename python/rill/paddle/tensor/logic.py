"""paddle.tensor.logic: comparisons, logical and bitwise ops. They broadcast numpy's way;
comparisons give bool tensors, bitwise ops their operands' type, without a gradient."""
from rill.fluid.layers.control_flow import logical_and, logical_not, logical_or, logical_xor  # noqa: F401
from rill.fluid.layer_helper import LayerHelper
from rill.paddle import _op

__all__ = ["equal", "not_equal", "less_than", "less_equal", "greater_than", "greater_equal", "logical_and",
           "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not"]

_COMPARED = ("bool", "float32", "float64", "int32", "int64")


def _compare(op_type, x, y, name):
    _op.check_variable(x, "x", op_type, _COMPARED)
    _op.check_variable(y, "y", op_type, _COMPARED)
    return _op.append(op_type, {"X": [x], "Y": [y]}, dtype="bool", name=name, stop_gradient=True)


def equal(x, y, name=None):
    return _compare("equal", x, y, name)


def not_equal(x, y, name=None):
    return _compare("not_equal", x, y, name)


def less_than(x, y, name=None):
    return _compare("less_than", x, y, name)


def less_equal(x, y, name=None):
    return _compare("less_equal", x, y, name)


def greater_than(x, y, name=None):
    return _compare("greater_than", x, y, name)


def greater_equal(x, y, name=None):
    return _compare("greater_equal", x, y, name)


_BITWISE = ("bool", "uint8", "int8", "int16", "int32", "int64")


def _bitwise(op_type, x, y, out, name):
    """op_type of x (and y, for the binary ones), into `out` when given."""
    _op.check_variable(x, "x", op_type, _BITWISE)
    inputs = {"X": [x]}
    if y is not None:
        _op.check_variable(y, "y", op_type, _BITWISE)
        inputs["Y"] = [y]
    if out is None:
        return _op.append(op_type, inputs, name=name, stop_gradient=True)
    LayerHelper(op_type, name=name).append_op(type=op_type, inputs=inputs, outputs={"Out": [out]})
    return out


def bitwise_and(x, y, out=None, name=None):
    return _bitwise("bitwise_and", x, y, out, name)


def bitwise_or(x, y, out=None, name=None):
    return _bitwise("bitwise_or", x, y, out, name)


def bitwise_xor(x, y, out=None, name=None):
    return _bitwise("bitwise_xor", x, y, out, name)


def bitwise_not(x, out=None, name=None):
    return _bitwise("bitwise_not", x, None, out, name)
