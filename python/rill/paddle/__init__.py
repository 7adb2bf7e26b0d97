"""rill.paddle: Paddle 2.x's static-graph Python API on rill.fluid.

    import rill.paddle as paddle
    x = paddle.static.data("x", [None, 4], "float32")
    y = paddle.nn.functional.relu(paddle.add(x, x))

Programs written for Paddle 2.x in static mode (paddle.enable_static()) build here with the
same names, arguments and defaults: the tensor functions (paddle.add, paddle.split, ...,
rill/paddle/tensor/), paddle.nn.functional and the layers of paddle.nn, paddle.static. Each
function appends Paddle's op to the current program, as Paddle's own static graph does, so
the program is the one Paddle would build and runs on Rill's executor. disable_static()
switches to the dynamic graph (rill.fluid.dygraph: each op runs as it is appended;
paddle.to_tensor makes values, Tensor.numpy() reads them).
"""
import numpy as np

from rill.fluid import dygraph
from rill.fluid import framework as fluid_framework
from rill.paddle import _op, framework, metric, nn, optimizer, regularizer, static, tensor, vision  # noqa: F401
from rill.paddle.framework import get_default_dtype, seed, set_default_dtype  # noqa: F401
from rill.paddle.param_attr import ParamAttr  # noqa: F401
from rill.paddle.serialization import save, load  # noqa: F401
from rill.paddle.tensor import *  # noqa: F401,F403
from rill.fluid.core import CPUPlace, CUDAPlace, CUDAPinnedPlace, is_compiled_with_cuda  # noqa: F401

__all__ = ["framework", "get_default_dtype", "set_default_dtype", "metric", "nn", "optimizer", "regularizer",
           "static", "tensor", "vision", "ParamAttr", "CPUPlace", "CUDAPlace", "CUDAPinnedPlace",
           "is_compiled_with_cuda", "disable_static", "enable_static", "in_dynamic_mode", "to_tensor", "save", "load",
           "seed"] + tensor.__all__



def disable_static(place=None):
    """Dynamic graph mode (fluid.dygraph): ops run as they are appended, values read with
    numpy(). Stays on until enable_static; called in it, its programs become current again
    (a program_guard left since may have restored static ones)."""
    if dygraph.enabled():
        dygraph.base.resume_dygraph()
    else:
        dygraph.enable_dygraph(place)


def enable_static():
    """Static graph mode: functions append ops to the current program for an executor to run."""
    while dygraph.enabled():
        dygraph.disable_dygraph()


def in_dynamic_mode():
    return dygraph.enabled()


def to_tensor(data, dtype=None, place=None, stop_gradient=True):
    """A tensor holding a copy of `data` (a numpy array, list or number; Python floats take
    the default dtype): in dynamic mode a value at once, in static mode a constant of the
    program."""
    if isinstance(data, fluid_framework.Variable):  # a copy of a tensor
        if data.block.program._eager is None:
            return tensor.creation.assign(data) if dtype is None else tensor.manipulation.cast(data, dtype)
        data = data.numpy()
    value = np.array(data)
    if dtype is not None:
        value = value.astype(fluid_framework.dtype_to_np(_op.as_dtype(dtype)))
    elif value.dtype == np.float64 and not isinstance(data, np.ndarray):
        value = value.astype(get_default_dtype())  # Python floats: the default dtype
    if dygraph.enabled():
        return dygraph.to_variable(value, stop_gradient=stop_gradient)
    out = tensor.creation.assign(value)
    out.stop_gradient = stop_gradient
    return out
