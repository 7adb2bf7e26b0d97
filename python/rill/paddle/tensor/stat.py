"""paddle.tensor.stat: statistics over axes."""
from rill.paddle.tensor.math import reduce

__all__ = ["mean"]


def mean(x, axis=None, keepdim=False, name=None):
    """The mean over `axis` (an int, a list of them, or None for every element)."""
    return reduce("reduce_mean", x, axis, keepdim, name, "mean", ("float32", "float64"))

