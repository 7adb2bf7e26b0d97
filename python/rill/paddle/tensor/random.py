"""paddle.tensor.random: tensors of random values."""
from rill.fluid import layers
from rill.paddle import _op

__all__ = ["uniform", "rand", "randn", "normal"]


def _dtype(dtype, fn):
    dtype = "float32" if dtype is None else dtype
    if _op.as_dtype(dtype) not in (_op.VarType.FP32, _op.VarType.FP64):
        raise TypeError("%s: dtype must be float32 or float64, got %s" % (fn, dtype))
    return dtype


def uniform(shape, dtype=None, min=-1.0, max=1.0, seed=0, name=None):
    """Values drawn uniformly from [min, max) (seed 0: a fresh seed each run)."""
    return layers.uniform_random(shape, _dtype(dtype, "uniform"), min=min, max=max, seed=seed, name=name)


def rand(shape, dtype=None, name=None):
    return uniform(shape, dtype, 0.0, 1.0, name=name)


def normal(mean=0.0, std=1.0, shape=None, name=None):
    return layers.gaussian_random(shape, mean=mean, std=std, dtype="float32", name=name)


def randn(shape, dtype=None, name=None):
    return layers.gaussian_random(shape, mean=0.0, std=1.0, dtype=_dtype(dtype, "randn"), name=name)
