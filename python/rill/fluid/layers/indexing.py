"""var[item] on a Variable, as Fluid 1.8's Variable.__getitem__ builds it: one slice op
(on a tensor array: an int reads an entry, a slice takes a range of them).

An item is a tuple (or one entry) of: an int or a one-element int Variable (that dim is
taken and dropped: the op's decrease_axis), a slice whose bounds and step are ints or
one-element int Variables, `...` (every dim it stands for, whole); a list of ints or a
multi-element int Variable as the only entry selects rows (gather). A step other than 1
makes the op strided_slice, which reads the bounds as Paddle does (a stop of -1 with a
negative step is past the first element, Python's None). None and other indices are
errors naming what was given.
"""
from rill.fluid.framework import Variable
from rill.fluid.layer_helper import LayerHelper
from rill.fluid.layers.tensor_attrs import int_list_argument

# An end past any dim (Fluid's MAX_INTEGER): what an open slice end and the index -1 read as.
_END = 2 ** 31 - 1


def _is_scalar_index(value):
    if isinstance(value, Variable):
        return list(value.shape) == [1]
    return isinstance(value, int) and not isinstance(value, bool)


def _expand_ellipsis(var, item):
    if sum(1 for i in item if i is Ellipsis) > 1:
        raise IndexError("%s[...]: an index can have one ellipsis" % var.name)
    if Ellipsis not in item:
        return item
    at = item.index(Ellipsis)
    whole = len(var.shape) - (len(item) - 1)
    return item[:at] + (slice(None),) * max(whole, 0) + item[at + 1:]


def _scalar_bounds(var, dim, index):
    """(start, end) of the one-element slice at `index` along `dim`."""
    from rill.fluid.layers.nn import elementwise_mod
    from rill.fluid.layers.tensor import fill_constant
    if not isinstance(index, Variable):
        size = var.shape[dim] if dim < len(var.shape) else -1
        if size >= 0 and not -size <= index < size:
            raise IndexError("%s[...]: index %d is out of range for dim %d of size %d" % (var.name, index, dim, size))
        return index, (index + 1 if index != -1 else _END)
    size = var.shape[dim] if dim < len(var.shape) else -1
    if size > 0:  # a negative index counts from the end: index mod size
        index = elementwise_mod(index, fill_constant([1], index.dtype, size))
    return index, index + 1


def not_iterable(var):
    """Variables are not sequences, though they take [] (Python would otherwise iterate one
    by indexing 0, 1, ...)."""
    raise TypeError("Variable %s is not iterable (index it, or split it)" % var.name)


def _array_range(array, item):
    """array[start:stop]: a tensor array of those entries (one slice op)."""
    start = 0 if item.start is None else item.start
    stop = _END if item.stop is None else item.stop
    return _slice(array, [0], [start], [stop], [], array_out=True)


def _slice(var, axes, starts, ends, decrease, array_out=False, strides=None):
    """One slice op of `var` (bounds ints or one-element int Variables), or strided_slice
    where `strides` are given; its output a tensor array like `var` when array_out."""
    op = "slice" if strides is None else "strided_slice"
    helper = LayerHelper(op)
    inputs, attrs = {"Input": var}, {"axes": axes, "decrease_axis": decrease}
    int_list_argument(starts, "starts", op, inputs, attrs, "starts", None, "StartsTensorList", dtype_checked=False)
    int_list_argument(ends, "ends", op, inputs, attrs, "ends", None, "EndsTensorList", dtype_checked=False)
    if strides is not None:
        int_list_argument(strides, "strides", op, inputs, attrs, "strides", None, "StridesTensorList",
                          dtype_checked=False)
        attrs["infer_flags"] = [1] * len(axes)
    if array_out:
        out = helper.create_variable(name=helper.name + ".out", type=var.type, dtype=var.dtype)
        out._shape = var._shape
    else:
        out = helper.create_tmp_variable(dtype=var.dtype)
    helper.append_op(type=op, inputs=inputs, outputs={"Out": out}, attrs=attrs)
    return out


def getitem(var, item):
    from rill.fluid.layers.nn import gather
    from rill.fluid.layers.control_flow import array_read, is_array
    if is_array(var):  # an entry of a tensor array, or a range of them
        if isinstance(item, slice) and item.step in (None, 1):
            return _array_range(var, item)
        if not _is_scalar_index(item):
            raise IndexError("%s[...]: a tensor array takes an int, a one-element int Variable or a slice, got %r"
                             % (var.name, item))
        if not isinstance(item, Variable):
            from rill.fluid.layers.tensor import fill_constant
            item = fill_constant([1], "int64", item)
        return array_read(var, item)
    if not isinstance(item, tuple):
        item = (item,)
    item = _expand_ellipsis(var, item)
    if len(item) == 1 and (isinstance(item[0], list) or isinstance(item[0], Variable) and not _is_scalar_index(item[0])):
        from rill.fluid.layers.tensor import assign
        import numpy as np
        index = item[0] if isinstance(item[0], Variable) else assign(np.array(item[0], "int64"))
        return gather(var, index)
    if len(item) > len(var.shape) and var.shape:
        raise IndexError("%s[...]: %d indices for a variable of %d dims" % (var.name, len(item), len(var.shape)))
    axes, starts, ends, strides, decrease = [], [], [], [], []
    for dim, index in enumerate(item):
        step = 1
        if _is_scalar_index(index):
            start, end = _scalar_bounds(var, dim, index)
            decrease.append(dim)
        elif isinstance(index, slice):
            step = 1 if index.step is None else index.step
            if not _is_scalar_index(step) or (not isinstance(step, Variable) and step == 0):
                raise IndexError("%s[...]: a slice's step is a nonzero int or a one-element int Variable, got %r"
                                 % (var.name, index.step))
            if index.start is None and index.stop is None and not isinstance(step, Variable) and step == 1:
                continue
            backwards = not isinstance(step, Variable) and step < 0
            start = (-1 if backwards else 0) if index.start is None else index.start
            end = (-1 if backwards else _END) if index.stop is None else index.stop
        else:
            raise IndexError("%s[...]: an index is an int, a slice, ... or a one-element int Variable; got %r"
                             % (var.name, index))
        axes.append(dim)
        starts.append(start)
        ends.append(end)
        strides.append(step)
    if not axes:
        return var
    strided = any(isinstance(s, Variable) or s != 1 for s in strides)
    return _slice(var, axes, starts, ends, decrease, strides=strides if strided else None)
