"""fluid.layers.get_places and ParallelDo, Fluid 0.14's data parallelism inside a program.

    places = fluid.layers.get_places()
    pd = fluid.layers.ParallelDo(places)
    with pd.do():
        img_ = pd.read_input(img)
        pd.write_output(net(img_))
    out = pd()

Fluid splits the batch across the places, runs the block on each and joins the outputs.
Rill runs the block once over the whole batch instead, its kernels spread over the intra-op
team: the ops are appended to the current block as they come, read_input gives its input
back, and pd() gives the outputs written (one Variable, or a list of them). For a block of
per-sample ops this computes what Fluid's split computes; an output reduced inside the
block (a mean) is one value where Fluid's is one per place, which a mean over pd() (as
Fluid's book does) makes the same. get_places gives the PLACE_LIST variable ParallelDo
takes; nothing reads the places it would hold.
"""
import contextlib

from rill.fluid import unique_name
from rill.fluid.framework import Variable, VarType, default_main_program

__all__ = ["get_places", "ParallelDo"]


def get_places(device_count=None, device_type=None):
    """A PLACE_LIST variable, for ParallelDo."""
    if device_count is not None and (not isinstance(device_count, int) or device_count < 1):
        raise ValueError("get_places: device_count must be a positive int, got %r" % (device_count,))
    if device_type not in (None, "CPU", "CUDA"):
        raise ValueError("get_places: device_type must be None, 'CPU' or 'CUDA', got %r" % (device_type,))
    return default_main_program().current_block().create_var(name=unique_name.generate("get_places.out"),
                                                             type=VarType.PLACE_LIST)


class ParallelDo(object):
    def __init__(self, places, use_nccl=False, name=None):
        if not isinstance(places, Variable) or places.type != VarType.PLACE_LIST:
            raise TypeError("ParallelDo takes the places get_places gives")
        self.places = places
        self.use_nccl = use_nccl
        self._outputs = []
        self._state = "new"  # new -> in do() -> done

    @contextlib.contextmanager
    def do(self):
        if self._state != "new":
            raise ValueError("ParallelDo: do() opens its block once")
        self._state = "in do()"
        yield
        self._state = "done"

    def read_input(self, var):
        self._check_inside("read_input")
        return var

    def write_output(self, var):
        self._check_inside("write_output")
        if not isinstance(var, Variable):
            raise TypeError("ParallelDo.write_output takes a Variable, got %s" % type(var).__name__)
        self._outputs.append(var)

    def __call__(self):
        if self._state != "done":
            raise ValueError("ParallelDo: call it after its `with pd.do():` block")
        if not self._outputs:
            raise ValueError("ParallelDo: the block wrote no output (write_output)")
        return self._outputs[0] if len(self._outputs) == 1 else list(self._outputs)

    def _check_inside(self, what):
        if self._state != "in do()":
            raise ValueError("ParallelDo.%s belongs inside `with pd.do():`" % what)
