"""paddle.static: Paddle 2.x's name for Fluid's static-graph API (programs, data, the
executor), which here is rill.fluid's."""
from rill.fluid import (Program, Variable, program_guard, default_main_program,  # noqa: F401
                        default_startup_program, Executor, global_scope, scope_guard, append_backward, data,
                        gradients, ParamAttr, CPUPlace, CUDAPlace)
from rill.fluid.layers import create_parameter, create_global_var  # noqa: F401
from rill.fluid.io import save_inference_model, load_inference_model  # noqa: F401
from rill.paddle.static import nn  # noqa: F401
