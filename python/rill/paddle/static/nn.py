"""paddle.static.nn: Paddle 2.x's names for Fluid's layers that make parameters."""
from rill.fluid import layers

__all__ = ["fc"]


def fc(x, size, num_flatten_dims=1, weight_attr=None, bias_attr=None, activation=None, name=None):
    """Fluid's fc under Paddle 2.x's argument names."""
    return layers.fc(x, size, num_flatten_dims=num_flatten_dims, param_attr=weight_attr, bias_attr=bias_attr,
                     act=activation, name=name)
