"""fluid.transpiler.memory_optimization_transpiler: memory_optimize and release_memory,
accepted and leaving the program as it is (docs/PYTHON.md)."""
from rill.fluid.framework import Program

__all__ = ["memory_optimize", "release_memory"]


def memory_optimize(input_program, skip_opt_set=None, print_log=False, level=0):
    """Fluid's memory_optimize rewrote a program so that variables whose lives do not overlap
    share memory. Rill's executor keeps each variable's own buffer from run to run instead
    (a tensor of an unchanged size is rewritten in place), so there is nothing to rewrite:
    the program is accepted and left as it is (docs/PYTHON.md)."""
    if not isinstance(input_program, Program):
        raise TypeError("memory_optimize takes a Program, got %s" % type(input_program).__name__)
    if level not in (0, 1):
        raise ValueError("memory_optimize: level must be 0 or 1, got %r" % (level,))
    if print_log:
        print("memory_optimize: the program is left as it is (Rill keeps each variable's own buffer)")


def release_memory(input_program, skip_opt_set=None):
    """Fluid's release_memory inserted ops freeing variables after their last use; as with
    memory_optimize, Rill leaves the program as it is (docs/PYTHON.md)."""
    memory_optimize(input_program, skip_opt_set)
