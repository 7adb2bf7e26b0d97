"""fluid.layers.tensor: making, filling, copying and converting tensors."""
import numpy as np

from rill.fluid import core
from rill.fluid.framework import Variable
from rill.fluid.initializer import Constant
from rill.fluid.layer_helper import LayerHelper

__all__ = ["create_tensor", "create_parameter", "create_global_var", "cast", "concat", "sums", "assign",
           "fill_constant", "ones", "zeros", "argmax"]


def create_tensor(dtype, name=None, persistable=False):
    helper = LayerHelper("create_tensor", **locals())
    return helper.create_variable(name=helper.name, dtype=dtype, persistable=persistable)


def create_parameter(shape, dtype, name=None, attr=None, is_bias=False, default_initializer=None):
    from rill.fluid.param_attr import ParamAttr
    helper = LayerHelper("create_parameter", **locals())
    if attr is None:
        attr = ParamAttr(name=name)
    return helper.create_parameter(attr, shape, dtype, is_bias, default_initializer)


def create_global_var(shape, value, dtype, persistable=False, force_cpu=False, name=None):
    helper = LayerHelper("global_var", **locals())
    var = helper.create_global_variable(dtype=dtype, shape=shape, persistable=persistable, name=name)
    helper.set_variable_initializer(var, initializer=Constant(value=float(value), force_cpu=force_cpu))
    return var


def cast(x, dtype):
    helper = LayerHelper("cast", **locals())
    out = helper.create_tmp_variable(dtype=dtype)
    out._shape = list(x.shape)
    helper.append_op(type="cast", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"in_dtype": x.dtype, "out_dtype": out.dtype})
    return out


def concat(input, axis=0, name=None):
    helper = LayerHelper("concat", **locals())
    out = helper.create_tmp_variable(dtype=helper.input_dtype())
    shapes = [list(v.shape) for v in input]
    if shapes and all(shapes):
        s = list(shapes[0])
        a = axis if axis >= 0 else axis + len(s)
        s[a] = -1 if any(t[a] < 0 for t in shapes) else sum(t[a] for t in shapes)
        out._shape = s
    helper.append_op(type="concat", inputs={"X": input}, outputs={"Out": [out]}, attrs={"axis": axis})
    return out


def sums(input, out=None):
    helper = LayerHelper("sum", **locals())
    if out is None:
        out = helper.create_tmp_variable(dtype=helper.input_dtype())
        out._shape = list(input[0].shape)
    helper.append_op(type="sum", inputs={"X": input}, outputs={"Out": out})
    return out


def assign(input, output=None):
    """output = a copy of ``input`` (a Variable, or a one-element numpy array)."""
    helper = LayerHelper("assign", **locals())
    if isinstance(input, Variable):
        if output is None:
            output = helper.create_tmp_variable(dtype=input.dtype)
            output._shape = list(input.shape)
        helper.append_op(type="assign", inputs={"X": [input]}, outputs={"Out": [output]})
        return output
    value = np.asarray(input)
    if value.size != 1:
        raise NotImplementedError("assign of a numpy array of %d values: Rill has no assign_value op; feed the "
                                  "array, or set it in the scope" % value.size)
    return fill_constant(list(value.shape) or [1], value.dtype, float(value.reshape(-1)[0]), out=output)


def fill_constant(shape, dtype, value, force_cpu=False, out=None):
    helper = LayerHelper("fill_constant", **locals())
    if out is None:
        out = helper.create_tmp_variable(dtype=dtype)
        out._shape = list(shape)
    helper.append_op(type="fill_constant", inputs={}, outputs={"Out": [out]},
                     attrs={"shape": list(shape), "dtype": out.dtype, "value": float(value),
                            "force_cpu": force_cpu})
    out.stop_gradient = True
    return out


def ones(shape, dtype, force_cpu=False):
    return fill_constant(value=1.0, **locals())


def zeros(shape, dtype, force_cpu=False):
    return fill_constant(value=0.0, **locals())


def argmax(x, axis=0):
    helper = LayerHelper("arg_max", **locals())
    out = helper.create_tmp_variable(core.VarDesc.VarType.INT64)
    helper.append_op(type="arg_max", inputs={"X": x}, outputs={"Out": [out]}, attrs={"axis": axis})
    return out


