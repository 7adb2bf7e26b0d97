"""paddle.fluid in the stand-in: rill.fluid, with `core` answering Paddle's build queries
(see ../__init__.py); any other name is a placeholder that skips the test using it."""
from rill.fluid import *  # noqa: F401,F403
import rill.fluid as _rill_fluid

import importlib as _importlib

# The stand-in's core (rill.fluid's star import brought rill.fluid.core under that name).
core = _importlib.import_module("paddle.fluid.core")
is_compiled_with_cuda = core.is_compiled_with_cuda  # the stand-in's answer: a GPU is here to test on
CUDAPlace = core.CUDAPlace  # skips the test making one where no GPU is here
# rill.fluid.dygraph, forwarded: a dygraph layer it lacks (BatchNorm, ...) skips, naming it.
dygraph = _importlib.import_module("paddle.fluid.dygraph")


def __getattr__(attr):
    if attr.startswith("__"):
        raise AttributeError(attr)
    if hasattr(_rill_fluid, attr):
        return getattr(_rill_fluid, attr)
    from paddle import Unsupported
    return Unsupported("paddle.fluid." + attr)
