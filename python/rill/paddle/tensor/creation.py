"""paddle.tensor.creation: tensors made from values (full, zeros, ones, assign) and the
triangles of matrices (tril, triu)."""
import numpy as np

from rill.fluid import layers
from rill.fluid.framework import Variable
from rill.paddle import _op

__all__ = ["full", "zeros", "ones", "full_like", "zeros_like", "ones_like", "assign", "tril", "triu"]


def full(shape, fill_value, dtype=None, name=None):
    """A tensor of `shape` (ints and one-element int tensors, or a 1-D int tensor) holding
    `fill_value` (a number or a one-element tensor), of `dtype` (float32 by default)."""
    return layers.fill_constant(shape, "float32" if dtype is None else dtype, fill_value)


def zeros(shape, dtype=None, name=None):
    return full(shape, 0.0, dtype, name)


def ones(shape, dtype=None, name=None):
    return full(shape, 1.0, dtype, name)


def full_like(x, fill_value, dtype=None, name=None):
    _op.check_variable(x, "x", "full_like", ("bool", "float16", "float32", "float64", "int32", "int64"))
    out_dtype = x.dtype if dtype is None else _op.as_dtype(dtype)
    return _op.append("fill_any_like", {"X": x}, {"value": float(fill_value), "dtype": out_dtype}, dtype=out_dtype,
                      shape=x.shape, name=name, stop_gradient=True)


def zeros_like(x, dtype=None, name=None):
    return full_like(x, 0, dtype, name)


def ones_like(x, dtype=None, name=None):
    return full_like(x, 1, dtype, name)


def assign(x, output=None):
    """A copy of `x`: a tensor, a numpy array, a list or a number (a number becomes a
    one-element tensor; float64 values float32, as Paddle keeps them in the program)."""
    if not isinstance(x, Variable):
        if isinstance(x, (bool, int, float)) or isinstance(x, (list, tuple)):
            x = np.array([x] if np.isscalar(x) else x)
        if isinstance(x, np.ndarray) and x.dtype == np.float64:
            x = x.astype(np.float32)
    return layers.assign(x, output)


def _triangle(op_type, x, diagonal, name):
    _op.check_variable(x, "x", op_type, ("float16", "float32", "float64", "int32", "int64"))
    if len(x.shape) < 2:
        raise ValueError("x shape in %s must be at least 2-D" % op_type)
    if isinstance(diagonal, bool) or not isinstance(diagonal, int):
        raise TypeError("diagonal in %s must be a python Int" % op_type)
    return _op.append("tril_triu", {"X": x}, {"diagonal": diagonal, "lower": op_type == "tril"}, shape=x.shape,
                      name=name, layer=op_type)


def tril(x, diagonal=0, name=None):
    """x with the elements above its matrices' diagonal-th diagonal (0 the main one,
    positive above it) zeroed."""
    return _triangle("tril", x, diagonal, name)


def triu(x, diagonal=0, name=None):
    """x with the elements below its matrices' diagonal-th diagonal zeroed."""
    return _triangle("triu", x, diagonal, name)
