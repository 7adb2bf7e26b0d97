"""paddle.static in the stand-in: Paddle 2.x's name for Fluid's static graph API, so the
names it shares with Fluid are rill.fluid's; any other name is a placeholder that skips the
test using it (see ../__init__.py)."""
from rill.fluid import (Program, Variable, program_guard, default_main_program,  # noqa: F401
                        default_startup_program, Executor, global_scope, scope_guard, append_backward, data)


def __getattr__(attr):
    if attr.startswith("__"):
        raise AttributeError(attr)
    from paddle import Unsupported
    return Unsupported("paddle.static." + attr)
