"""paddle.framework: the default floating dtype (float32 unless set_default_dtype says
otherwise), which random tensors, Python floats made tensors and new layers' parameters
take when no dtype is given."""

import numpy as np

__all__ = ["set_default_dtype", "get_default_dtype"]

_FLOATING = ("float16", "float32", "float64")
_default = ["float32"]


def set_default_dtype(d):
    name = np.dtype(d).name if not isinstance(d, str) else d
    if name not in _FLOATING:
        raise TypeError("set_default_dtype only supports [float16, float32, float64], but received %s" % name)
    _default[0] = name


def get_default_dtype():
    return _default[0]
