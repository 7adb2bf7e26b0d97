"""paddle.tensor.random: tensors of random values."""
from rill.fluid import layers
from rill.paddle import _op
from rill.paddle.framework import get_default_dtype

__all__ = ["uniform", "rand", "randn", "normal", "gaussian", "standard_normal"]


def _dtype(dtype, fn):
    dtype = get_default_dtype() if dtype is None else dtype
    if _op.as_dtype(dtype) not in (_op.VarType.FP32, _op.VarType.FP64):
        raise TypeError("%s: dtype must be float32 or float64, got %s" % (fn, dtype))
    return dtype


def uniform(shape, dtype=None, min=-1.0, max=1.0, seed=0, name=None):
    """Values drawn uniformly from [min, max) (seed 0: a fresh seed each run)."""
    return layers.uniform_random(shape, _dtype(dtype, "uniform"), min=min, max=max, seed=seed, name=name)


def rand(shape, dtype=None, name=None):
    return uniform(shape, dtype, 0.0, 1.0, name=name)


def normal(mean=0.0, std=1.0, shape=None, name=None):
    return layers.gaussian_random(shape, mean=mean, std=std, dtype=_dtype(None, "normal"), name=name)


def gaussian(shape, mean=0.0, std=1.0, dtype=None, name=None):
    """Values drawn from N(mean, std^2)."""
    return layers.gaussian_random(shape, mean=mean, std=std, dtype=_dtype(dtype, "gaussian"), name=name)


def standard_normal(shape, dtype=None, name=None):
    return gaussian(shape, 0.0, 1.0, dtype, name)


randn = standard_normal
