"""fluid.DistributeTranspiler: a training program into trainer and pserver programs, by the
runtime's transpiler (core/program/transpiler.h). ``transport`` picks the ops, and so the
plugin that runs them: "grpc" (send, recv, listen_and_serv) or "mpi" (their _mpi kin).
Each trainer learns its index from RILL_TRAINER_ID when it runs."""
from rill import _rill
from rill.fluid.framework import Program, default_main_program, default_startup_program

__all__ = ["DistributeTranspiler", "memory_optimize", "release_memory"]

_TRANSPORT_OPS = {"grpc": ("send", "recv", "listen_and_serv"),
                  "mpi": ("send_mpi", "recv_mpi", "listen_and_serv_mpi")}


class DistributeTranspiler(object):
    def __init__(self, transport="grpc"):
        if transport not in _TRANSPORT_OPS:
            raise ValueError("transport must be one of %s, got %r" % (", ".join(sorted(_TRANSPORT_OPS)), transport))
        self.transport = transport
        self._result = None

    def transpile(self, trainer_id, program=None, pservers="127.0.0.1:6174", trainers=1, sync_mode=True,
                  startup_program=None):
        if not sync_mode:
            raise NotImplementedError("only sync_mode=True is supported")
        program = default_main_program() if program is None else program
        startup = default_startup_program() if startup_program is None else startup_program
        self.trainer_id = trainer_id
        self.endpoints = [e.strip() for e in pservers.split(",") if e.strip()]
        send, recv, serve = _TRANSPORT_OPS[self.transport]
        self._result = _rill.transpile(program.serialize_to_string(), startup.serialize_to_string(), trainers,
                                       self.endpoints, send, recv, serve)

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


def memory_optimize(input_program, skip_opt_set=None, print_log=False, level=0):
    """Fluid's memory_optimize rewrote a program so that variables whose lives do not overlap
    share memory. Rill's executor keeps each variable's own buffer from run to run instead
    (a tensor of an unchanged size is rewritten in place), so there is nothing to rewrite:
    the program is accepted and left as it is (docs/PYTHON.md)."""
    from rill.fluid.framework import Program
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
