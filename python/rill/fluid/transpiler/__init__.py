"""fluid.transpiler: programs rewritten for a setting, as Fluid's package of that name:
``DistributeTranspiler`` (and ``slice_variable``) for parameter-server training,
``memory_optimize``/``release_memory``."""
from rill.fluid.transpiler.distribute_transpiler import (DistributeTranspiler, DistributeTranspilerConfig,
                                                        slice_variable)
from rill.fluid.transpiler.memory_optimization_transpiler import memory_optimize, release_memory

__all__ = ["DistributeTranspiler", "DistributeTranspilerConfig", "slice_variable", "memory_optimize", "release_memory"]
