"""Arithmetic and comparison operators on Variables, as Fluid 0.14's math_op_patch gave them:
``a + b`` is elementwise_add (with Fluid's broadcasting), ``x * 2.0`` and ``1 - x`` are one
``scale`` op, ``a < b`` is less_than; and Fluid 1.8's ``x[1:3, i]`` (indexing.py). Applied to Variable when rill.fluid.layers is imported."""
from rill.fluid import core
from rill.fluid.framework import Variable
from rill.fluid.layer_helper import LayerHelper

_VarType = core.VarDesc.VarType
_INTEGRAL = (_VarType.BOOL, _VarType.UINT8, _VarType.INT8, _VarType.INT16, _VarType.INT32, _VarType.INT64)


def _scale(var, scale, bias):
    helper = LayerHelper("scale")
    out = helper.create_tmp_variable(dtype=var.dtype)
    out._shape = list(var.shape)
    helper.append_op(type="scale", inputs={"X": [var]}, outputs={"Out": [out]},
                     attrs={"scale": float(scale), "bias": float(bias)})
    return out


def _binary(op_type, reverse=False, scalar=None):
    """The method for ``op_type``; ``scalar(var, value)`` handles a Python number, if given."""
    def method(self, other):
        if op_type in ("equal", "not_equal") and not isinstance(other, (Variable, int, float)):
            return NotImplemented  # None, a name, ...: Python's own comparison (identity)
        if isinstance(other, float) and self.dtype in _INTEGRAL:
            # An integer or bool Variable with a float is computed in float32, as Paddle 1.8+.
            from rill.fluid.layers.tensor import cast
            self = cast(self, "float32")
        if isinstance(other, (int, float)) and not isinstance(other, bool) and scalar is not None:
            return scalar(self, other)
        if not isinstance(other, Variable):
            from rill.fluid.layers.tensor import fill_constant
            other = fill_constant(shape=[1], dtype=self.dtype, value=other)
        x, y = (other, self) if reverse else (self, other)
        helper = LayerHelper(op_type)
        compare = op_type in ("less_than", "less_equal", "greater_than", "greater_equal", "equal", "not_equal")
        out = helper.create_tmp_variable(dtype="bool" if compare else x.dtype)
        out._shape = list(x.shape)
        helper.append_op(type=op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                         attrs={} if compare else {"axis": -1})
        return out

    method.__name__ = op_type
    return method


def monkey_patch_variable():
    ops = {
        "__add__": _binary("elementwise_add", scalar=lambda v, c: _scale(v, 1.0, c)),
        "__radd__": _binary("elementwise_add", reverse=True, scalar=lambda v, c: _scale(v, 1.0, c)),
        "__sub__": _binary("elementwise_sub", scalar=lambda v, c: _scale(v, 1.0, -c)),
        "__rsub__": _binary("elementwise_sub", reverse=True, scalar=lambda v, c: _scale(v, -1.0, c)),
        "__mul__": _binary("elementwise_mul", scalar=lambda v, c: _scale(v, c, 0.0)),
        "__rmul__": _binary("elementwise_mul", reverse=True, scalar=lambda v, c: _scale(v, c, 0.0)),
        "__truediv__": _binary("elementwise_div", scalar=lambda v, c: _scale(v, 1.0 / c, 0.0)),
        "__rtruediv__": _binary("elementwise_div", reverse=True),
        "__pow__": _binary("elementwise_pow"),
        "__mod__": _binary("elementwise_mod"),
        "__floordiv__": _binary("elementwise_floordiv"),
        "__lt__": _binary("less_than"),
        "__le__": _binary("less_equal"),
        "__gt__": _binary("greater_than"),
        "__ge__": _binary("greater_equal"),
        # As Fluid patches them: `a == b` is an equal op, not a comparison of Variables
        # (compare `a is b`, or names). Hashing stays by identity.
        "__eq__": _binary("equal"),
        "__ne__": _binary("not_equal"),
    }
    from rill.fluid.layers.indexing import getitem, not_iterable
    ops["__getitem__"] = getitem
    ops["__iter__"] = not_iterable
    for name, method in ops.items():
        setattr(Variable, name, method)
    Variable.__hash__ = object.__hash__
    Variable.__div__ = Variable.__truediv__
