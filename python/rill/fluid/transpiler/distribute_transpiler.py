"""fluid.transpiler.distribute_transpiler: a training program into trainer and pserver
programs, by the runtime's transpiler (core/program/transpiler.h). ``transport`` picks the
ops, and so the plugin that runs them: "grpc" (send, recv, listen_and_serv) or "mpi" (their
_mpi kin). Each trainer learns its index from RILL_TRAINER_ID when it runs.

Training is synchronous unless ``sync_mode=False`` (transpile's argument, or
``DistributeTranspilerConfig.sync_mode``): then each trainer's step is applied alone on the
pservers, as it arrives; ``config.max_staleness`` (Rill's) bounds how many steps a trainer
may run ahead of the slowest other one.

``slice_variable`` is Fluid's rule for cutting variables into blocks to spread over
pservers. The runtime's transpiler does not cut: it places each variable whole, grouping
those whose updates read each other's gradients (transpiler.h)."""
import math

from rill import _rill
from rill.fluid.framework import Program, default_main_program, default_startup_program

__all__ = ["DistributeTranspiler", "DistributeTranspilerConfig", "slice_variable", "delete_ops"]


def delete_ops(block, ops):
    """Removes ops ``ops`` (a run of consecutive ops of ``block``, in order) from the block."""
    if not ops:
        return
    start, end = block.ops.index(ops[0]), block.ops.index(ops[-1])
    if end - start + 1 != len(ops) or any(a is not b for a, b in zip(block.ops[start:end + 1], ops)):
        raise ValueError("delete_ops: the ops given are not a run of consecutive ops of block %d" % block.idx)
    block.remove_op(start, end + 1)


def slice_variable(var_list, slice_count, min_block_size=8192):
    """Fluid's blocks of each variable of ``var_list`` for ``slice_count`` pservers, as
    "name:block_id:size" strings in order: at most ``slice_count`` blocks of at least
    ``min_block_size`` elements each (one if the variable is smaller), sized equally and
    rounded up to whole rows (dims after the first), the last block what remains."""
    if slice_count < 1 or min_block_size < 1:
        raise ValueError("slice_variable: slice_count and min_block_size must be at least 1, got %r and %r" %
                         (slice_count, min_block_size))
    blocks = []
    for var in var_list:
        if var.shape is None or any(d < 0 for d in var.shape):
            raise ValueError("slice_variable: variable %s needs a known shape, has %s" % (var.name, var.shape))
        numel = int(math.prod(var.shape))
        split_count = max(1, min(slice_count, numel // min_block_size))
        block_size = -(-numel // split_count)
        if len(var.shape) >= 2:
            row = int(math.prod(var.shape[1:]))
            block_size += -block_size % row
        for block_id in range(-(-numel // block_size)):
            blocks.append("%s:%d:%d" % (var.name, block_id, min(block_size, numel - block_id * block_size)))
    return blocks

_TRANSPORT_OPS = {"grpc": ("send", "recv", "listen_and_serv", "prefetch"),
                  "mpi": ("send_mpi", "recv_mpi", "listen_and_serv_mpi", "prefetch_mpi")}


class DistributeTranspilerConfig(object):
    """Fluid's settings of a DistributeTranspiler. Taken: ``sync_mode`` and ``mode``
    ("pserver"), and Rill's ``max_staleness`` (asynchronous training: how many steps a
    trainer may run ahead of the slowest other one; -1, no bound). ``slice_var_up``,
    ``split_method`` and ``min_block_size`` are kept for Fluid's scripts: the runtime places
    each variable whole (see the module's text). Modes the runtime does not have (nccl2,
    collective, half_async, geo_sgd_mode, dc_asgd) are refused when transpiling."""
    slice_var_up = True
    split_method = None
    min_block_size = 8192
    mode = "pserver"
    sync_mode = True
    max_staleness = -1
    half_async = False
    geo_sgd_mode = False
    enable_dc_asgd = False
    print_log = False
    wait_port = True


class DistributeTranspiler(object):
    def __init__(self, config=None, transport="grpc"):
        if transport not in _TRANSPORT_OPS:
            raise ValueError("transport must be one of %s, got %r" % (", ".join(sorted(_TRANSPORT_OPS)), transport))
        self.config = DistributeTranspilerConfig() if config is None else config
        self.transport = transport
        self._result = None

    def transpile(self, trainer_id, program=None, pservers="127.0.0.1:6174", trainers=1, sync_mode=True,
                  startup_program=None):
        c = self.config
        for name, off in (("mode", "pserver"), ("half_async", False), ("geo_sgd_mode", False),
                          ("enable_dc_asgd", False)):
            if getattr(c, name) != off:
                raise NotImplementedError("DistributeTranspilerConfig.%s = %r: the runtime trains by parameter "
                                          "servers, synchronously or asynchronously (sync_mode), only" %
                                          (name, getattr(c, name)))
        self.sync_mode = bool(sync_mode) and bool(c.sync_mode)
        if self.sync_mode and c.max_staleness != -1:
            raise ValueError("max_staleness %r bounds asynchronous training; set sync_mode False" % c.max_staleness)
        program = default_main_program() if program is None else program
        startup = default_startup_program() if startup_program is None else startup_program
        self.trainer_id = trainer_id
        self.endpoints = [e.strip() for e in pservers.split(",") if e.strip()]
        send, recv, serve, prefetch = _TRANSPORT_OPS[self.transport]
        self._result = _rill.transpile(program.serialize_to_string(), startup.serialize_to_string(), trainers,
                                       self.endpoints, send, recv, serve, prefetch, self.sync_mode,
                                       int(c.max_staleness))

    def _check(self):
        if self._result is None:
            raise RuntimeError("call transpile() first")

    def get_trainer_program(self):
        self._check()
        return Program.parse_from_string(self._result["trainer"])

    def get_trainer_startup_program(self):
        self._check()
        return Program.parse_from_string(self._result["trainer_startup"])

    def _index(self, endpoint):
        if endpoint not in self.endpoints:
            raise ValueError("%s is not one of the pservers (%s)" % (endpoint, ", ".join(self.endpoints)))
        return self.endpoints.index(endpoint)

    def get_pserver_program(self, endpoint):
        self._check()
        return Program.parse_from_string(self._result["pservers"][self._index(endpoint)])

    def get_startup_program(self, endpoint=None, pserver_program=None):
        """The pserver's startup program for ``endpoint``; with no endpoint, the trainers'."""
        self._check()
        if endpoint is None:
            return self.get_trainer_startup_program()
        return Program.parse_from_string(self._result["pserver_startups"][self._index(endpoint)])
