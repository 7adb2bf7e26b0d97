"""fluid.ParallelExecutor and its strategies, Fluid 0.14's multi-device executor.

Fluid copies the program onto each device, splits each batch across them and averages the
gradients. On Rill one program already runs across the machine's cores (each kernel on
the intra-op team), so a ParallelExecutor is one Executor over the whole batch in its own
scope (or the scope of `share_vars_from`), with one place: device_count is 1, a feed given
as a list must hold one dict, and the fetched values are the batch's. Run the startup
program with an Executor first, as in Fluid. The strategies' fields are accepted and kept;
none changes how a program runs.
"""
from rill.fluid import core, executor
from rill.fluid.framework import Program, Variable, default_main_program

__all__ = ["ParallelExecutor", "ExecutionStrategy", "BuildStrategy"]


class ExecutionStrategy(object):
    def __init__(self):
        self.num_threads = 0
        self.use_cuda = False
        self.allow_op_delay = False
        self.num_iteration_per_drop_scope = 100


class BuildStrategy(object):
    class ReduceStrategy(object):
        AllReduce = 0
        Reduce = 1

    class GradientScaleStrategy(object):
        CoeffNumDevice = 0
        One = 1
        Customized = 2

    def __init__(self):
        self.reduce_strategy = BuildStrategy.ReduceStrategy.AllReduce
        self.gradient_scale_strategy = BuildStrategy.GradientScaleStrategy.CoeffNumDevice
        self.debug_graphviz_path = ""
        self.enable_inplace = False
        self.memory_optimize = False
        self.fuse_all_reduce_ops = False


class ParallelExecutor(object):
    def __init__(self, use_cuda, loss_name=None, main_program=None, share_vars_from=None, exec_strategy=None,
                 build_strategy=None, num_trainers=1, trainer_id=0, scope=None, **kwargs):
        for key in kwargs:
            if not hasattr(ExecutionStrategy(), key) and not hasattr(BuildStrategy(), key):
                raise TypeError("ParallelExecutor got an unexpected argument %r" % key)
        if share_vars_from is not None and not isinstance(share_vars_from, ParallelExecutor):
            raise TypeError("share_vars_from must be a ParallelExecutor")
        self.main_program = default_main_program() if main_program is None else main_program
        if not isinstance(self.main_program, Program):
            raise TypeError("main_program must be a Program")
        if loss_name is not None and self.main_program.global_block()._find_var_recursive(loss_name) is None:
            raise ValueError("loss_name %r is not a variable of the program" % loss_name)
        self.loss_name = loss_name
        self.exec_strategy = exec_strategy or ExecutionStrategy()
        self.build_strategy = build_strategy or BuildStrategy()
        self.num_trainers, self.trainer_id = num_trainers, trainer_id
        self.place = core.CUDAPlace(0) if use_cuda else core.CPUPlace()
        if share_vars_from is not None:
            self.scope = share_vars_from.scope
        else:
            self.scope = executor.global_scope() if scope is None else scope
        self._exe = executor.Executor(self.place)

    @property
    def device_count(self):
        return 1

    def run(self, fetch_list, feed=None, feed_dict=None, return_numpy=True):
        """The fetch_list values (names or Variables) after one run on feed (a dict, or a
        list of one dict per device: here one)."""
        if feed is None:
            feed = feed_dict
        if isinstance(feed, (list, tuple)):
            if len(feed) != self.device_count:
                raise ValueError("Feed a list of tensor, the list should be the same size as places (%d)"
                                 % self.device_count)
            if not isinstance(feed[0], dict):
                raise TypeError("Each element of feed list should be a dict")
            feed = feed[0]
        names = [v.name if isinstance(v, Variable) else v for v in fetch_list]
        return self._exe.run(self.main_program, feed=feed or {}, fetch_list=names, scope=self.scope,
                             return_numpy=return_numpy)

    def bcast_params(self):
        """Nothing to broadcast: one copy of the parameters."""
