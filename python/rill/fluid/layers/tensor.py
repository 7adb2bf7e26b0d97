"""fluid.layers.tensor: making, filling, copying and converting tensors."""
import numpy as np

from rill.fluid import core
from rill.fluid.framework import Variable, _dtype_name, convert_np_dtype_to_dtype_, dtype_to_np
from rill.fluid.initializer import Constant
from rill.fluid.layer_helper import LayerHelper
from rill.fluid.layers.checks import check_dtype, check_variable_and_dtype
from rill.fluid.layers.tensor_attrs import int_list_argument

__all__ = ["create_tensor", "create_parameter", "create_global_var", "cast", "concat", "sum", "sums", "assign",
           "fill_constant", "fill_constant_batch_size_like", "ones", "zeros", "argmax", "argmin", "shape", "range",
           "isfinite", "has_inf", "has_nan", "triu"]


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


_CAST_DTYPES = ["bool", "float16", "float32", "float64", "int32", "int64", "uint8"]


def cast(x, dtype):
    check_variable_and_dtype(x, "x", _CAST_DTYPES, "cast")
    check_dtype(dtype, "dtype", _CAST_DTYPES, "cast")
    helper = LayerHelper("cast", **locals())
    out = helper.create_tmp_variable(dtype=dtype)
    out._shape = list(x.shape)
    helper.append_op(type="cast", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"in_dtype": x.dtype, "out_dtype": out.dtype})
    return out


def concat(input, axis=0, name=None):
    from rill.fluid.layers.control_flow import is_array, tensor_array_to_tensor
    if is_array(input):
        return tensor_array_to_tensor(input, axis)[0]
    if isinstance(input, Variable):
        input = [input]
    if not isinstance(axis, (int, Variable)) or isinstance(axis, bool):
        raise TypeError("The type of 'axis' in concat must be int or Variable, but received %s" % type(axis).__name__)
    if len(set(v.dtype for v in input)) > 1:
        raise TypeError("All the inputs of concat must have one dtype, got %s" %
                        ", ".join(_dtype_name(v.dtype) for v in input))
    helper = LayerHelper("concat", **locals())
    out = helper.create_tmp_variable(dtype=helper.input_dtype())
    inputs = {"X": input}
    if isinstance(axis, Variable):  # known when the program runs
        check_dtype(axis.dtype, "axis", ["int32", "int64"], "concat")
        inputs["AxisTensor"], axis = axis, 0
        out._shape = [-1] * len(input[0].shape)
    shapes = [list(v.shape) for v in input]
    if "AxisTensor" not in inputs and shapes and all(shapes):
        s = list(shapes[0])
        a = axis if axis >= 0 else axis + len(s)
        s[a] = -1 if any(t[a] < 0 for t in shapes) else int(np.sum([t[a] for t in shapes]))
        out._shape = s
    helper.append_op(type="concat", inputs=inputs, outputs={"Out": [out]}, attrs={"axis": axis})
    return out


def sum(x):
    """The sum of the Variables in ``x`` (Fluid 1.x's name for sums)."""
    return sums(x if isinstance(x, (list, tuple)) else [x])


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
    if isinstance(input, core.LoDTensor):
        raise TypeError("The type of 'input' in assign must be Variable or numpy.ndarray, but received LoDTensor")
    if isinstance(input, Variable):
        check_dtype(input.dtype, "input", ["float16", "float32", "float64", "int32", "int64", "bool"], "assign")
        if input.type == core.VarDesc.VarType.LOD_TENSOR_ARRAY and output is None:
            output = helper.create_variable(name=helper.name + ".out", type=input.type, dtype=input.dtype)
            output._shape = input._shape
        if output is None:
            output = helper.create_tmp_variable(dtype=input.dtype)
            output._shape = list(input.shape)
        helper.append_op(type="assign", inputs={"X": [input]}, outputs={"Out": [output]})
        return output
    # A numpy array: its values in the program (assign_value), as Fluid writes them.
    value = np.asarray(input)
    attr = {np.dtype(np.float32): "fp32_values", np.dtype(np.int32): "int32_values",
            np.dtype(np.int64): "int64_values", np.dtype(np.bool_): "bool_values"}.get(value.dtype)
    if attr is None and value.size == 1:  # one value of another dtype (float64): as fill_constant takes it
        return fill_constant(list(value.shape) or [1], value.dtype, float(value.reshape(-1)[0]), out=output)
    if attr is None:
        raise TypeError("assign: a numpy array of %s; assign_value holds float32, int32, int64 or bool" % value.dtype)
    if value.size > 1024 * 1024:
        raise ValueError("assign: %d values are too many to keep in the program; feed the array, or save it and "
                         "load it" % value.size)
    if output is None:
        output = helper.create_tmp_variable(dtype=value.dtype)
        output._shape = list(value.shape)
    values = [float(v) for v in value.flat] if attr == "fp32_values" else [int(v) for v in value.flat]
    helper.append_op(type="assign_value", inputs={}, outputs={"Out": [output]},
                     attrs={"dtype": convert_np_dtype_to_dtype_(value.dtype), "shape": list(value.shape), attr: values})
    output.stop_gradient = True
    return output


def fill_constant(shape, dtype, value, force_cpu=False, out=None):
    """A tensor of `shape` (a list of ints and one-element int Variables, or a 1-D int
    Variable) filled with `value` (a number, or a one-element Variable) as `dtype`; written
    into `out` when given (its dtype must be `dtype`)."""
    check_dtype(dtype, "dtype", ["bool", "float16", "float32", "float64", "uint8", "int32", "int64"],
                "fill_constant")
    if isinstance(shape, (list, tuple)) and len(shape) == 0:
        raise AssertionError("The size of 'shape' in fill_constant can't be zero")
    if out is not None:
        check_variable_and_dtype(out, "out", [np.dtype(dtype_to_np(dtype)).name], "fill_constant")
    helper = LayerHelper("fill_constant", **locals())
    inputs, attrs = {}, {"value": float(value) if not isinstance(value, Variable) else 0.0, "force_cpu": force_cpu}
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        attrs["str_value"] = str(int(value))  # exact where a float attribute is not (2**31 - 1, int64)
    if isinstance(value, Variable):
        inputs["ValueTensor"] = value if value.dtype == convert_np_dtype_to_dtype_(dtype) else cast(value, dtype)
    known = int_list_argument(shape, "shape", "fill_constant", inputs, attrs, "shape", "ShapeTensor",
                              "ShapeTensorList")
    if out is None:
        out = helper.create_tmp_variable(dtype=dtype)
        out._shape = list(known)
    attrs["dtype"] = out.dtype
    helper.append_op(type="fill_constant", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
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


def argmin(x, axis=0):
    helper = LayerHelper("arg_min", **locals())
    out = helper.create_tmp_variable(core.VarDesc.VarType.INT64)
    helper.append_op(type="arg_min", inputs={"X": x}, outputs={"Out": [out]}, attrs={"axis": axis})
    return out


def fill_constant_batch_size_like(input, shape, dtype, value, input_dim_idx=0, output_dim_idx=0):
    """A tensor of ``shape`` filled with ``value``, its dim output_dim_idx taken from input's
    dim input_dim_idx (the batch size)."""
    helper = LayerHelper("fill_constant_batch_size_like", **locals())
    out = helper.create_tmp_variable(dtype=dtype)
    out._shape = list(shape)
    helper.append_op(type="fill_constant_batch_size_like", inputs={"Input": input}, outputs={"Out": [out]},
                     attrs={"shape": list(shape), "dtype": out.dtype, "value": float(value),
                            "input_dim_idx": input_dim_idx, "output_dim_idx": output_dim_idx})
    out.stop_gradient = True
    return out


def shape(input):
    """input's dims, as an int32 tensor."""
    helper = LayerHelper("shape", **locals())
    out = helper.create_tmp_variable(dtype="int32")
    out._shape = [len(input.shape)]
    helper.append_op(type="shape", inputs={"Input": input}, outputs={"Out": [out]})
    out.stop_gradient = True
    return out


def range(start, end, step, dtype):
    """start, start + step, ... short of end; each a number or a one-element Variable."""
    helper = LayerHelper("range", **locals())
    bounds = [v if isinstance(v, Variable) else fill_constant([1], dtype, v) for v in (start, end, step)]
    out = helper.create_tmp_variable(dtype=dtype)
    out._shape = [-1]
    helper.append_op(type="range", inputs={"Start": bounds[0], "End": bounds[1], "Step": bounds[2]},
                     outputs={"Out": [out]})
    out.stop_gradient = True
    return out


def isfinite(x):
    """A bool [1]: whether every element of x is finite."""
    return _all_finite_check("isfinite", x)


def has_inf(x):
    """A bool [1]: whether some element of x is infinite."""
    return _all_finite_check("isinf", x)


def has_nan(x):
    """A bool [1]: whether some element of x is NaN."""
    return _all_finite_check("isnan", x)


def _all_finite_check(op_type, x):
    check_variable_and_dtype(x, "x", ["float32", "float64", "int32", "int64"], op_type)
    helper = LayerHelper(op_type, x=x)
    out = helper.create_tmp_variable(dtype="bool")
    out._shape = [1]
    helper.append_op(type=op_type, inputs={"X": x}, outputs={"Out": [out]})
    out.stop_gradient = True
    return out


def triu(input, diagonal=0, name=None):
    """Paddle 2.1's fluid.layers.triu (paddle.triu): input with the elements below its
    matrices' diagonal-th diagonal zeroed."""
    from rill.paddle.tensor.creation import triu as paddle_triu  # rill.paddle builds on rill.fluid
    return paddle_triu(input, diagonal=diagonal, name=name)
