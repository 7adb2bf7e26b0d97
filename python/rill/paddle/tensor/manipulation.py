"""paddle.tensor.manipulation: shape and layout functions (split, concat, flatten, gather,
tile, expand, roll, where, ...) as Paddle 2.x's static graph builds them, on Fluid's layers
where those take the same arguments."""
from rill.fluid import layers
from rill.fluid.layers import nn as fluid_nn
from rill.fluid.framework import Variable
from rill.fluid.layers.tensor_attrs import int_list_argument
from rill.paddle import _op

__all__ = ["split", "concat", "stack", "flatten", "gather", "tile", "transpose", "t", "reshape", "squeeze",
           "unsqueeze", "expand", "expand_as", "flip", "roll", "index_select", "where", "cast", "slice", "multiplex",
           "scatter", "gather_nd", "scatter_nd_add", "scatter_nd", "strided_slice"]

_ANY = _op.NUMBERS + ("bool", "uint8", "int8", "int16")


def split(x, num_or_sections, axis=0, name=None):
    """x split along `axis` (an int or a one-element int tensor) into num_or_sections equal
    parts, or parts of the listed sizes (at most one -1, for the rest)."""
    _op.check_variable(x, "x", "split", ("bool", "float16", "float32", "float64", "int32", "int64"))
    if isinstance(num_or_sections, float) or isinstance(axis, float):
        raise TypeError("split: num_or_sections and axis must be ints or tensors, got %r and %r" %
                        (num_or_sections, axis))
    return layers.split(x, num_or_sections, dim=axis, name=name)


def concat(x, axis=0, name=None):
    return layers.concat(x, axis=axis, name=name)


def stack(x, axis=0, name=None):
    """The tensors of `x` (a list or tuple of one shape, or a tensor array) stacked along a
    new dim `axis`; one tensor is a TypeError, as Paddle's."""
    from rill.fluid.layers.control_flow import is_array
    if isinstance(x, Variable) and not is_array(x):
        raise TypeError("The type of 'x' in stack must be list[Tensor], tuple[Tensor] or TensorArray, but received "
                        "Tensor")
    return layers.stack(x, axis=axis)


def cast(x, dtype):
    return layers.cast(x, dtype)


def slice(input, axes, starts, ends):
    """input[starts[i]:ends[i]] along each axes[i] (bounds lists of ints and one-element int
    tensors, or 1-D int tensors)."""
    return layers.slice(input, axes, starts, ends)


def strided_slice(x, axes, starts, ends, strides, name=None):
    """x[starts[i]:ends[i]:strides[i]] along each axes[i] (bounds lists of ints and
    one-element int tensors, or 1-D int tensors)."""
    return fluid_nn.strided_slice(x, axes, starts, ends, strides)


def multiplex(inputs, index, name=None):
    """Row i of the result is row i of inputs[index[i]]."""
    return layers.multiplex(inputs, index, name=name)


def transpose(x, perm, name=None):
    return layers.transpose(x, perm, name=name)


def reshape(x, shape, name=None):
    return layers.reshape(x, shape, name=name)


def t(input, name=None):
    """A matrix transposed; a vector as it is. More than 2 dims is a ValueError."""
    _op.check_variable(input, "input", "t", ("float16", "float32", "float64", "int32", "int64"))
    if len(input.shape) > 2:
        raise ValueError("Input(input) only support N-D (N<=2) tensor, but received length of Input(input) is %s. "
                         "Perhaps you can use paddle.tensor.transpose() instead." % len(input.shape))
    if len(input.shape) < 2:
        return input
    return layers.transpose(input, [1, 0], name=name)


def _axis_in(axis, rank, fn, arg="axis"):
    if not -rank <= axis < max(rank, 1):
        raise ValueError("%s: %s %d is out of range for a tensor of %d dims" % (fn, arg, axis, rank))
    return axis % rank if rank else 0


def flatten(x, start_axis=0, stop_axis=-1, name=None):
    """x with dims start_axis..stop_axis made one (flatten_contiguous_range)."""
    if not isinstance(x, Variable):
        raise ValueError("The input x should be a Tensor")
    _op.check_variable(x, "x", "flatten", ("float32", "float64", "int8", "int32", "int64", "uint8"))
    rank = len(x.shape)
    if not isinstance(start_axis, int) or not isinstance(stop_axis, int):
        raise ValueError("flatten: start_axis and stop_axis must be ints")
    start = _axis_in(start_axis, rank, "flatten", "start_axis")
    stop = _axis_in(stop_axis, rank, "flatten", "stop_axis")
    if start > stop:
        raise ValueError("The stop_axis should be larger than stat_axis")
    merged = x.shape[start:stop + 1]
    shape = list(x.shape[:start]) + [-1 if any(d < 0 for d in merged) else fluid_nn._prod(merged)] + \
        list(x.shape[stop + 1:])
    return _op.append("flatten_contiguous_range", {"X": x}, {"start_axis": start, "stop_axis": stop}, shape=shape,
                      name=name, layer="flatten", outputs=("Out", "XShape"))[0]


def gather(x, index, axis=None, name=None):
    """The slices of x at `index` along `axis` (an int, a one-element int tensor, or None for 0)."""
    _op.check_variable(x, "x", "gather", ("float16", "float32", "float64", "int32", "int64", "uint8"))
    _op.check_variable(index, "index", "gather", ("int32", "int64"))
    inputs, attrs = {"X": x, "Index": index}, {"overwrite": False}
    if isinstance(axis, Variable):
        inputs["Axis"] = axis
        shape = None
    else:
        axis = 0 if axis is None else axis
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise TypeError("The type of 'axis' in gather must be int or Tensor, but received %s" %
                            type(axis).__name__)
        attrs["axis"] = axis
        shape = list(x.shape)
        if shape:
            shape[axis % len(shape)] = index.shape[0] if index.shape else -1
    return _op.append("gather", inputs, attrs, shape=shape, name=name)


def tile(x, repeat_times, name=None):
    """x repeated repeat_times[k] times along dim k (a list of ints and one-element int
    tensors, or a 1-D int tensor)."""
    _op.check_variable(x, "x", "tile", ("bool", "float32", "float64", "int32", "int64"))
    if x.dtype == _op.VarType.BOOL and not x.stop_gradient:
        raise ValueError("When the date type is bool for the input 'x' of tile op, you must set its stop_gradient "
                         "to be True by some_var.stop_gradient == True supporting some_var is the input.")
    inputs, attrs = {"X": x}, {}
    int_list_argument(repeat_times, "repeat_times", "tile", inputs, attrs, "repeat_times", "RepeatTimes",
                      "repeat_times_tensor")
    return _op.append("tile", inputs, attrs, name=name)


def expand(x, shape, name=None):
    """x broadcast to `shape` (-1 keeps x's dim), a list of ints and one-element int tensors
    or a 1-D int tensor."""
    _op.check_variable(x, "x", "expand", ("bool", "float32", "float64", "int32", "int64"))
    if x.dtype == _op.VarType.BOOL and not x.stop_gradient:
        raise ValueError("When the data type of input 'x' for expand is bool, you must set its stop_gradient to be "
                         "True by some_var.stop_gradient = True, supporting some_var as the input.")
    inputs, attrs = {"X": x}, {}
    known = int_list_argument(shape, "shape", "expand", inputs, attrs, "shape", "Shape", "expand_shapes_tensor")
    return _op.append("expand_v2", inputs, attrs, shape=known or None, name=name, layer="expand")


def expand_as(x, y, name=None):
    """x broadcast to y's shape."""
    _op.check_variable(x, "x", "expand_as", ("bool", "float32", "float64", "int32", "int64"))
    _op.check_variable(y, "y", "expand_as", ("bool", "float32", "float64", "int32", "int64"))
    if x.dtype == _op.VarType.BOOL and not x.stop_gradient:
        raise ValueError("When the data type of input 'x' for expand_as is bool, you must set its stop_gradient to "
                         "be True by some_var.stop_gradient = True, supporting some_var as the input 'x'.")
    return _op.append("expand_as_v2", {"X": x, "Y": y}, {"target_shape": list(y.shape)}, shape=y.shape, name=name,
                      layer="expand_as")


def _int_list(value, arg, fn):
    values = [value] if isinstance(value, int) else value
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                        for v in values):
        raise TypeError("The type of '%s' in %s must be int, list or tuple of ints, but received %r" %
                        (arg, fn, value))
    return list(values)


def squeeze(x, axis=None, name=None):
    axes = [] if axis is None else _int_list(axis, "axis", "squeeze")
    return layers.squeeze(x, axes, name=name)


def unsqueeze(x, axis, name=None):
    """x with a dim of 1 inserted at each of `axis` (an int, a list of ints and one-element
    int tensors, or a 1-D int tensor)."""
    _op.check_variable(x, "x", "unsqueeze", ("float16", "float32", "float64", "bool", "int8", "int32", "int64"))
    inputs, attrs = {"X": x}, {}
    if isinstance(axis, int):
        axis = [axis]
    axes = int_list_argument(axis, "axis", "unsqueeze", inputs, attrs, "axes", "AxesTensor", "AxesTensorList")
    shape = None
    if "AxesTensor" not in inputs and "AxesTensorList" not in inputs:
        shape = list(x.shape)
        for a in axes:
            shape.insert(a if a >= 0 else a + len(shape) + 1, 1)
    return _op.append("unsqueeze2", inputs, attrs, shape=shape, name=name, layer="unsqueeze",
                      outputs=("Out", "XShape"))[0]


def flip(x, axis, name=None):
    """x reversed along each of `axis` (an int or a list of them)."""
    _op.check_variable(x, "x", "flip", ("float32", "float64", "int32", "int64", "bool"))
    return _op.append("flip", {"X": x}, {"axis": _int_list(axis, "axis", "flip")}, shape=x.shape, name=name)


def roll(x, shifts, axis=None, name=None):
    """x shifted by shifts[i] along axis[i], wrapping round; with no axis, x flattened is
    shifted and keeps its shape."""
    shifts = _int_list(shifts, "shifts", "roll")
    axes = [] if axis is None else _int_list(axis, "axis", "roll")
    for a in axes:
        if not -len(x.shape) <= a < len(x.shape):
            raise ValueError("axis is out of range, it should be in range [%d, %d), but received %d" %
                             (-len(x.shape), len(x.shape), a))
    return _op.append("roll", {"X": x}, {"axis": axes, "shifts": shifts}, shape=x.shape, name=name)


def index_select(x, index, axis=0, name=None):
    """The slices of x at `index` (1-D int) along `axis`."""
    _op.check_variable(x, "x", "index_select", ("float32", "float64", "int32", "int64"))
    _op.check_variable(index, "index", "index_select", ("int32", "int64"))
    shape = list(x.shape)
    if shape and index.shape:
        shape[axis % len(shape)] = index.shape[0]
    return _op.append("index_select", {"X": x, "Index": index}, {"dim": int(axis)}, shape=shape, name=name)


def where(condition, x=None, y=None, name=None):
    """x where condition holds, else y, elementwise; the three broadcast numpy's way."""
    if x is None or y is None:
        raise ValueError("where: x and y must both be given (the one-argument form is nonzero's)")
    _op.check_variable(condition, "condition", "where", ("bool",))
    _op.check_variable(x, "x", "where", ("float32", "float64", "int32", "int64"))
    _op.check_variable(y, "y", "where", ("float32", "float64", "int32", "int64"))
    if not list(x.shape) == list(y.shape) == list(condition.shape):
        # Each operand plus zeros of the others' shapes: the three broadcast to one shape,
        # values (infinities and NaNs too) unchanged.
        zero = layers.elementwise_add(_zeros_like(x), _zeros_like(y))
        zero = layers.elementwise_add(zero, layers.cast(_zeros_like(condition), x.dtype))
        x, y = layers.elementwise_add(x, zero), layers.elementwise_add(y, zero)
        condition = layers.cast(layers.elementwise_add(layers.cast(condition, x.dtype), zero), "bool")
    return _op.append("where", {"Condition": condition, "X": x, "Y": y}, dtype=x.dtype, shape=x.shape, name=name)


def _zeros_like(v):
    return _op.append("fill_zeros_like", {"X": v}, shape=v.shape, stop_gradient=True)


def scatter(x, index, updates, overwrite=True, name=None):
    """x with its rows at `index` taken from updates' rows: the last update of a row
    (overwrite), or the sum of its updates, the row's own value dropped."""
    _op.check_variable(x, "dtype", "scatter", ("float32", "float64"))
    _op.check_type(overwrite, "overwrite", (bool,), "scatter")
    return _op.append("scatter", {"X": x, "Ids": index, "Updates": updates}, {"overwrite": overwrite}, shape=x.shape,
                      name=name)


def gather_nd(x, index, name=None):
    """The slices of x that index's rows name (row (i0, .., ik-1): x[i0, .., ik-1, ...])."""
    _op.check_variable(x, "x", "gather_nd", ("bool", "float32", "float64", "int16", "int32", "int64", "uint8"))
    _op.check_variable(index, "index", "gather_nd", ("int32", "int64"))
    return fluid_nn.gather_nd(x, index, name)


def scatter_nd_add(x, index, updates, name=None):
    """x with each slice of updates added to the slice its index row names."""
    return fluid_nn.scatter_nd_add(x, index, updates, name)


def scatter_nd(index, updates, shape, name=None):
    """A tensor of `shape`: zeros with updates' slices added where index's rows name."""
    return fluid_nn.scatter_nd(index, updates, shape, name)
