"""rill.fluid: Fluid 0.14's Python API on Rill's runtime.

    import rill.fluid as fluid

Programs are built with Fluid's layers and run in-process by Rill's executor and plugins;
see docs/PYTHON.md.
"""
from rill.fluid import core, unique_name, framework, initializer, param_attr, layer_helper, executor, layers, \
    nets, backward, optimizer, io, concurrency, transpiler, data_feeder, debugger, profiler, regularizer, \
    clip, lod_tensor, input, trainer, inferencer, inference_transpiler, average, compiler, \
    parallel_executor, op, dygraph, contrib  # noqa: F401
from rill.fluid.data import data
from rill.fluid.input import embedding, one_hot
from rill.fluid.lod_tensor import create_lod_tensor, create_random_int_lodtensor
from rill.fluid.framework import Program, Block, Variable, Parameter, Operator, program_guard, \
    default_main_program, default_startup_program, switch_main_program, switch_startup_program, get_var
from rill.fluid.executor import Executor, global_scope, scope_guard, fetch_var
from rill.fluid.core import is_compiled_with_cuda, CPUPlace, CUDAPlace, CUDAPinnedPlace, LoDTensor, Scope
from rill.fluid.param_attr import ParamAttr, WeightNormParamAttr
from rill.fluid.data_feeder import DataFeeder
from rill.fluid.transpiler import DistributeTranspiler, DistributeTranspilerConfig, memory_optimize, release_memory
from rill.fluid.backward import append_backward, gradients
from rill.fluid.concurrency import Go, Select, make_channel, channel_send, channel_recv, channel_close
from rill.fluid.layers.control_flow import While
from rill.fluid.trainer import Trainer, BeginEpochEvent, EndEpochEvent, BeginStepEvent, EndStepEvent, CheckpointConfig
from rill.fluid.inferencer import Inferencer
from rill.fluid.inference_transpiler import InferenceTranspiler
from rill.fluid.compiler import CompiledProgram
from rill.fluid.parallel_executor import ParallelExecutor, ExecutionStrategy, BuildStrategy
from rill.fluid.dygraph import Linear, LayerNorm  # noqa: F401  (fluid.Linear, fluid.LayerNorm: Fluid 1.x's names)
from rill.fluid.dygraph import save_dygraph, load_dygraph  # noqa: F401  (Paddle 1.x/2.x's fluid.save_dygraph)

Tensor = LoDTensor  # Fluid 0.14's other name of it

__all__ = [
    "core", "unique_name", "framework", "initializer", "param_attr", "layer_helper", "executor", "layers", "nets",
    "backward", "optimizer", "io", "concurrency", "transpiler", "data_feeder", "debugger", "profiler", "regularizer",
    "clip", "lod_tensor", "input", "data", "embedding", "one_hot", "create_lod_tensor", "create_random_int_lodtensor", "is_compiled_with_cuda",
    "Program", "Block", "Variable",
    "Parameter", "Operator", "program_guard", "default_main_program", "default_startup_program",
    "switch_main_program", "switch_startup_program", "get_var", "Executor", "global_scope", "scope_guard",
    "fetch_var", "CPUPlace", "CUDAPlace", "CUDAPinnedPlace", "LoDTensor", "Tensor", "Scope", "ParamAttr",
    "WeightNormParamAttr", "DataFeeder", "DistributeTranspiler", "DistributeTranspilerConfig", "memory_optimize", "release_memory", "append_backward", "gradients", "Go", "Select",
    "make_channel", "channel_send", "channel_recv", "channel_close", "While", "trainer", "inferencer", "Trainer",
    "BeginEpochEvent", "EndEpochEvent", "BeginStepEvent", "EndStepEvent", "CheckpointConfig", "Inferencer",
    "inference_transpiler", "InferenceTranspiler", "average", "compiler", "parallel_executor", "CompiledProgram",
    "ParallelExecutor", "ExecutionStrategy", "BuildStrategy", "dygraph", "contrib", "save_dygraph", "load_dygraph",
]
