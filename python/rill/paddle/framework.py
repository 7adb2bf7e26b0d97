"""paddle.framework: the default floating dtype (float32 unless set_default_dtype says
otherwise), which random tensors, Python floats made tensors and new layers' parameters
take when no dtype is given; and the global seed."""

import numpy as np

__all__ = ["set_default_dtype", "get_default_dtype", "seed"]

_FLOATING = ("float16", "float32", "float64")
_default = ["float32"]


def set_default_dtype(d):
    name = np.dtype(d).name if not isinstance(d, str) else d
    if name not in _FLOATING:
        raise TypeError("set_default_dtype only supports [float16, float32, float64], but received %s" % name)
    _default[0] = name


def get_default_dtype():
    return _default[0]


def seed(value):
    """Paddle's global seed: random initializers of seed 0 built after it (in programs whose
    random_seed is 0) take their seeds from a generator seeded with `value`, so a program built
    twice after the same seed starts from the same parameters, each drawn apart from the
    others, as Paddle's global generator gives them. numpy's generator is seeded too."""
    from rill.fluid.initializer import set_global_seed
    np.random.seed(int(value))
    set_global_seed(value)
