"""Integer-list attributes a layer takes as Variables too (Fluid 1.8's and Paddle 2.x's
layers: a shape, slice bounds, expand times, an axis).

A value is given one of three ways: a list of ints (the attribute itself); one 1-D int32 or
int64 Variable holding the whole list (the op's "...Tensor" input); or a list mixing ints and
one-element int Variables (the op's "...TensorList" input, one [1] Variable per entry: the
ints become constants). The op reads the Variables when it runs, the Variable winning over
the attribute; the attribute keeps what is known when the program is built, -1 for an entry
a Variable gives, for the shapes the layers infer.
"""
from rill.fluid.framework import Variable
from rill.fluid.layers.checks import check_dtype

_INT_DTYPES = ("int32", "int64")


def has_variable(values):
    return isinstance(values, Variable) or isinstance(values, (list, tuple)) and any(
        isinstance(v, Variable) for v in values)


def int_list_argument(values, argument, layer, inputs, attrs, attr, tensor_slot, list_slot, dtype_checked=True):
    """Puts `values` (the layer's argument `argument`) into the op's `inputs` and `attrs`:
    the attribute `attr`, the input `tensor_slot` (one Variable) or `list_slot` (Variables
    among the ints); a slot may be None where the op has no such input. Returns the list
    the attribute holds. The Variables must be int32 or int64 where `dtype_checked` (a
    shape); Fluid's slice and expand leave that to the op, which reads what they hold when
    it runs (a data layer declared float may be fed ints)."""
    from rill.fluid.layers.tensor import fill_constant
    if isinstance(values, Variable):
        if tensor_slot is None:
            raise TypeError("%s: '%s' cannot be a Variable" % (layer, argument))
        if dtype_checked:
            check_dtype(values.dtype, argument, _INT_DTYPES, layer)
        values.stop_gradient = True
        inputs[tensor_slot] = values
        known = [-1] * values.shape[0] if len(values.shape) == 1 and values.shape[0] > 0 else []
        attrs[attr] = known
        return known
    if not isinstance(values, (list, tuple)):
        raise TypeError("The type of '%s' in %s must be list, tuple or Variable, but received %s"
                        % (argument, layer, type(values).__name__))
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, Variable)) and not hasattr(v, "__index__"):
            raise TypeError("The elements of '%s' in %s must be int or Variable, but received %s"
                            % (argument, layer, type(v).__name__))
    if not has_variable(values):
        attrs[attr] = [int(v) for v in values]
        return attrs[attr]
    if list_slot is None:
        raise TypeError("%s: '%s' cannot hold Variables" % (layer, argument))
    tensors = []
    for i, v in enumerate(values):
        if isinstance(v, Variable):
            if dtype_checked:
                check_dtype(v.dtype, "%s[%d]" % (argument, i), _INT_DTYPES, layer)
            v.stop_gradient = True
            tensors.append(v)
        else:
            tensors.append(fill_constant([1], "int32", int(v), force_cpu=True))
    inputs[list_slot] = tensors
    attrs[attr] = [-1 if isinstance(v, Variable) else int(v) for v in values]
    return attrs[attr]
