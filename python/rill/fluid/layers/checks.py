"""fluid.layers' argument checks, as Fluid's layers make them since 1.6: a layer's input
variables (its arguments x, y, input and label) must be Variables, or lists of them; any
other value is a TypeError naming the layer and the argument, raised before the layer reads
it. (Which dtypes an op takes is checked when the layer appends it: LayerHelper.append_op.)
"""
import functools
import inspect

import numpy as np

from rill.fluid.framework import Variable

INPUT_ARGUMENTS = ("x", "y", "input", "label")


def checked(layer):
    """`layer`, checking its input arguments first."""
    try:
        signature = inspect.signature(layer)
    except (TypeError, ValueError):
        return layer
    names = [n for n in INPUT_ARGUMENTS if n in signature.parameters]
    if not names:
        return layer

    @functools.wraps(layer)
    def call(*args, **kwargs):
        bound = signature.bind_partial(*args, **kwargs).arguments
        for name in names:
            value = bound.get(name)
            values = value if isinstance(value, (list, tuple)) else [value]
            for v in values:
                if v is not None and not isinstance(v, Variable):
                    raise TypeError("The type of '%s' in %s must be Variable, but received %s" %
                                    (name, layer.__name__, type(v).__name__))
        return layer(*args, **kwargs)
    return call


def numpy_name(dtype):
    """'float32', 'int64', ... for a Variable's dtype, or a dtype (a name, numpy or framework.proto's)."""
    from rill.fluid.framework import dtype_to_np
    try:
        return np.dtype(dtype_to_np(dtype)).name
    except (TypeError, ValueError):
        return str(dtype)


def check_dtype(dtype, argument, allowed, layer):
    """A TypeError naming `layer` and `argument` unless `dtype` is one of `allowed` (names:
    'float32', ...): Fluid's layers refuse some dtypes their kernels would take, and so do
    these, so that a program built here also runs on Paddle."""
    name = numpy_name(dtype)
    if name not in allowed:
        raise TypeError("The data type of '%s' in %s must be one of %s, but received %s"
                        % (argument, layer, list(allowed), name))


def check_variable_and_dtype(value, argument, allowed, layer):
    """check_dtype of a Variable `value`; a TypeError when it is not a Variable. In dygraph
    mode the dtype is left to the kernel, as Paddle's layers check it only in static mode."""
    if not isinstance(value, Variable):
        raise TypeError("The type of '%s' in %s must be Variable, but received %s"
                        % (argument, layer, type(value).__name__))
    if value.block.program._eager is None:
        check_dtype(value.dtype, argument, allowed, layer)


def check_type(value, argument, types, layer):
    """A TypeError naming `layer` and `argument` unless `value` is one of `types` (bool
    does not pass for int)."""
    if isinstance(value, bool) and bool not in types or not isinstance(value, types):
        raise TypeError("The type of '%s' in %s must be %s, but received %s"
                        % (argument, layer, " or ".join(t.__name__ for t in types), type(value).__name__))
