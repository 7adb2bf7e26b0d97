"""fluid.layers: functions that append ops to the current block of the main program."""
from rill.fluid.layers.io import *  # noqa: F401,F403
from rill.fluid.layers.tensor import *  # noqa: F401,F403
from rill.fluid.layers.nn import *  # noqa: F401,F403
from rill.fluid.layers.ops import *  # noqa: F401,F403
from rill.fluid.layers.control_flow import *  # noqa: F401,F403
from rill.fluid.layers import io, tensor, nn, ops, control_flow  # noqa: F401
from rill.fluid.layers.math_op_patch import monkey_patch_variable

monkey_patch_variable()
