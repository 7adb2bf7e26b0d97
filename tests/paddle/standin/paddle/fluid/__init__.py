"""paddle.fluid in the stand-in: rill.fluid, with `core` answering Paddle's build queries
(see ../__init__.py); any other name is a placeholder that skips the test using it."""
from rill.fluid import *  # noqa: F401,F403
import rill.fluid as _rill_fluid

from paddle.fluid import core  # noqa: E402,F401


def __getattr__(attr):
    if attr.startswith("__"):
        raise AttributeError(attr)
    if hasattr(_rill_fluid, attr):
        return getattr(_rill_fluid, attr)
    from paddle import Unsupported
    return Unsupported("paddle.fluid." + attr)
