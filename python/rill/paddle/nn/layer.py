"""paddle.nn.Layer: fluid.dygraph's Layer, its parameters of the default dtype
(paddle.set_default_dtype) unless given one."""
from rill.fluid.dygraph import layers
from rill.paddle.framework import get_default_dtype

__all__ = ["Layer"]


class Layer(layers.Layer):
    def __init__(self, name_scope=None, dtype=None):
        layers.Layer.__init__(self, name_scope, dtype or get_default_dtype())
