"""paddle.tensor: Paddle 2.x's tensor functions, each appending ops to the current program
(static graph; see rill/paddle/__init__.py)."""
from rill.fluid.framework import Variable
from rill.paddle.tensor import creation, inplace, logic, manipulation, math, random, search, stat  # noqa: F401
from rill.paddle.tensor.creation import *  # noqa: F401,F403
from rill.paddle.tensor.inplace import *  # noqa: F401,F403
from rill.paddle.tensor.logic import *  # noqa: F401,F403
from rill.paddle.tensor.manipulation import *  # noqa: F401,F403
from rill.paddle.tensor.math import *  # noqa: F401,F403
from rill.paddle.tensor.random import *  # noqa: F401,F403
from rill.paddle.tensor.search import *  # noqa: F401,F403
from rill.paddle.tensor.stat import *  # noqa: F401,F403

__all__ = creation.__all__ + inplace.__all__ + logic.__all__ + manipulation.__all__ + math.__all__ + random.__all__ + \
    search.__all__ + stat.__all__

# Paddle 2.x's tensors have the functions taking a tensor first as methods (x.add(y),
# x.add_(y), x.sum()): Variable gains each it does not have already.
for _name in logic.__all__ + manipulation.__all__ + math.__all__ + search.__all__ + stat.__all__ + inplace.__all__:
    if not hasattr(Variable, _name):
        setattr(Variable, _name, globals()[_name])
