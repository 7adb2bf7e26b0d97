"""fluid.layers' argument checks, as Fluid's layers make them since 1.6: a layer's input
variables (its arguments x, y, input and label) must be Variables, or lists of them; any
other value is a TypeError naming the layer and the argument, raised before the layer reads
it. (Which dtypes an op takes is checked when the layer appends it: LayerHelper.append_op.)
"""
import functools
import inspect

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
