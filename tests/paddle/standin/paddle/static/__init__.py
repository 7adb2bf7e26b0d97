"""paddle.static in the stand-in: rill.paddle.static (Paddle 2.x's name for Fluid's static
graph API); any other name is a placeholder that skips the test using it (see
../__init__.py)."""
from rill.paddle.static import *  # noqa: F401,F403
from rill.paddle.static import (Program, Variable, program_guard, default_main_program,  # noqa: F401
                                default_startup_program, Executor, global_scope, scope_guard, append_backward, data)


def __getattr__(attr):
    if attr.startswith("__"):
        raise AttributeError(attr)
    from paddle import Unsupported
    return Unsupported("paddle.static." + attr)
