"""paddle.tensor.logic: comparisons and logical ops. Comparisons broadcast numpy's way and
give bool tensors without a gradient."""
from rill.fluid.layers.control_flow import logical_and, logical_not, logical_or, logical_xor  # noqa: F401
from rill.paddle import _op

__all__ = ["equal", "not_equal", "less_than", "less_equal", "greater_than", "greater_equal", "logical_and",
           "logical_or", "logical_xor", "logical_not"]

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
