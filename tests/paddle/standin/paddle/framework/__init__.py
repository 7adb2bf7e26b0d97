"""paddle.framework in the stand-in: rill.paddle.framework, with `core` paddle.fluid.core
(the stand-in's); any other name is a placeholder that skips the test using it (see
../__init__.py)."""
from paddle.fluid import core  # noqa: F401
from rill.paddle.framework import get_default_dtype, set_default_dtype  # noqa: F401


def __getattr__(attr):
    if attr.startswith("__"):
        raise AttributeError(attr)
    from paddle import Unsupported
    return Unsupported("paddle.framework." + attr)
