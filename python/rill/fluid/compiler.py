"""fluid.compiler.CompiledProgram, Fluid 1.x's program prepared for an Executor.

    compiled = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name)
    exe.run(compiled, feed=..., fetch_list=[loss])

Executor.run takes one wherever it takes a Program. The Executor prepares every program
it runs already (and keeps it prepared), and a program runs across the machine's cores on
the intra-op team; so a CompiledProgram runs its program as it is, with data parallelism
or without (see parallel_executor.py). Its strategies are accepted and kept.
"""
from rill.fluid.framework import Program
from rill.fluid.parallel_executor import BuildStrategy, ExecutionStrategy

__all__ = ["CompiledProgram", "BuildStrategy", "ExecutionStrategy"]


class CompiledProgram(object):
    def __init__(self, program_or_graph, build_strategy=None):
        if not isinstance(program_or_graph, Program):
            raise TypeError("CompiledProgram takes a Program, got %s" % type(program_or_graph).__name__)
        self._program = program_or_graph
        self._build_strategy = build_strategy or BuildStrategy()
        self._exec_strategy = ExecutionStrategy()
        self._loss_name = None
        self._is_data_parallel = False

    def with_data_parallel(self, loss_name=None, build_strategy=None, exec_strategy=None, share_vars_from=None,
                           places=None):
        if self._is_data_parallel:
            raise ValueError("with_data_parallel was already called on this CompiledProgram")
        if loss_name is not None and self._program.global_block()._find_var_recursive(loss_name) is None:
            raise ValueError("loss_name %r is not a variable of the program" % loss_name)
        self._is_data_parallel = True
        self._loss_name = loss_name
        self._build_strategy = build_strategy or self._build_strategy
        self._exec_strategy = exec_strategy or self._exec_strategy
        return self

    @property
    def program(self):
        return self._program
