"""rill.paddle: Paddle 2.x's static-graph Python API on rill.fluid.

    import rill.paddle as paddle
    x = paddle.static.data("x", [None, 4], "float32")
    y = paddle.nn.functional.relu(paddle.add(x, x))

Programs written for Paddle 2.x in static mode (paddle.enable_static()) build here with the
same names, arguments and defaults: the tensor functions (paddle.add, paddle.split, ...,
rill/paddle/tensor/), paddle.nn.functional and the layers of paddle.nn, paddle.static. Each
function appends Paddle's op to the current program, as Paddle's own static graph does, so
the program is the one Paddle would build and runs on Rill's executor. There is no dynamic
graph mode (paddle.to_tensor, eager execution).
"""
from rill.paddle import nn, static, tensor  # noqa: F401
from rill.paddle.tensor import *  # noqa: F401,F403
from rill.fluid.core import CPUPlace, CUDAPlace, CUDAPinnedPlace, is_compiled_with_cuda  # noqa: F401

__all__ = ["nn", "static", "tensor", "CPUPlace", "CUDAPlace", "CUDAPinnedPlace", "is_compiled_with_cuda"] + \
    tensor.__all__

