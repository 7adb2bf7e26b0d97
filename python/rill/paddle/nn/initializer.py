"""paddle.nn.initializer: Paddle 2.x's names for Fluid's initializers."""
from rill.fluid.initializer import Constant, Normal, Uniform, Xavier  # noqa: F401

__all__ = ["Constant", "Normal", "Uniform", "XavierNormal", "XavierUniform"]


def XavierUniform(fan_in=None, fan_out=None, name=None):
    return Xavier(uniform=True, fan_in=fan_in, fan_out=fan_out)


def XavierNormal(fan_in=None, fan_out=None, name=None):
    return Xavier(uniform=False, fan_in=fan_in, fan_out=fan_out)
