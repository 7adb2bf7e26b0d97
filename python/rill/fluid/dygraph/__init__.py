"""fluid.dygraph: ops that run as they are appended (see base.py)."""
from rill.fluid.dygraph import base, checkpoint, layers, nn  # noqa: F401
from rill.fluid.dygraph.base import (guard, to_variable, enabled, enable_dygraph, disable_dygraph,  # noqa: F401
                                     no_grad)
from rill.fluid.dygraph.checkpoint import save_dygraph, load_dygraph  # noqa: F401
from rill.fluid.dygraph.layers import Layer  # noqa: F401
from rill.fluid.dygraph.nn import *  # noqa: F401,F403

__all__ = list(base.__all__) + ["Layer"] + list(checkpoint.__all__) + list(nn.__all__)

base.patch_variable()
