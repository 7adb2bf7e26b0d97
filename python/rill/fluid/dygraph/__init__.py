"""fluid.dygraph: ops that run as they are appended (see base.py)."""
from rill.fluid.dygraph import base  # noqa: F401
from rill.fluid.dygraph.base import (guard, to_variable, enabled, enable_dygraph, disable_dygraph,  # noqa: F401
                                     no_grad)

__all__ = list(base.__all__)

base.patch_variable()
