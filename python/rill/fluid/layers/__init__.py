"""fluid.layers: functions that append ops to the current block of the main program."""
import inspect

from rill.fluid.layers.io import *  # noqa: F401,F403
from rill.fluid.layers.tensor import *  # noqa: F401,F403
from rill.fluid.layers.nn import *  # noqa: F401,F403
from rill.fluid.layers.ops import *  # noqa: F401,F403
from rill.fluid.layers.control_flow import *  # noqa: F401,F403
from rill.fluid.layers.detection import *  # noqa: F401,F403
from rill.fluid.layers.learning_rate_scheduler import *  # noqa: F401,F403
from rill.fluid.layers.parallel_do import *  # noqa: F401,F403
from rill.fluid.layers.sequence_lod import *  # noqa: F401,F403
from rill.fluid.layers.rnn import *  # noqa: F401,F403
from rill.fluid.layers.dynamic_rnn import *  # noqa: F401,F403
from rill.fluid.layers.static_rnn import *  # noqa: F401,F403
from rill.fluid.layers.beam_decoding import *  # noqa: F401,F403
from rill.fluid.layers.sampled_losses import *  # noqa: F401,F403
from rill.fluid.layers.sequence_labeling import *  # noqa: F401,F403
from rill.fluid.layers import io, tensor, nn, ops, control_flow, detection, learning_rate_scheduler, \
    parallel_do, sequence_lod, rnn, dynamic_rnn, static_rnn, beam_decoding, sampled_losses, \
    sequence_labeling  # noqa: F401
from rill.fluid.layers.checks import checked as _checked
from rill.fluid.layers.math_op_patch import monkey_patch_variable
from rill.fluid.layers.program_kwargs import accepting_programs as _accepting_programs

# Every layer checks its input arguments (checks.py), but those that take values there too:
# assign copies a numpy array into the program. Every layer takes Fluid 0.14's
# main_program= and startup_program= (program_kwargs.py).
for _module in (io, tensor, nn, ops, control_flow, detection, learning_rate_scheduler, parallel_do, sequence_lod, rnn,
                dynamic_rnn, static_rnn, beam_decoding, sampled_losses, sequence_labeling):
    for _name in _module.__all__:
        if inspect.isfunction(globals().get(_name)):
            _layer = globals()[_name] if _name == "assign" else _checked(globals()[_name])
            globals()[_name] = _accepting_programs(_layer)

monkey_patch_variable()
