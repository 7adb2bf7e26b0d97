"""fluid.executor: running programs in-process.

``Executor(place).run(program, feed, fetch_list)`` adds Fluid's feed and fetch ops to a
copy of the program (as Fluid's executor does, with holder variables ``feed`` and
``fetch``), prepares it once per (program version, feed names, fetch names) and reuses
it. Feeds are numpy arrays (or LoDTensors, or values numpy turns into the declared dtype);
each is checked against its variable's declaration. Fetches come back as numpy arrays.
The GIL is released while the program runs; Ctrl-C raises KeyboardInterrupt after
stopping the run; a runtime error raises rill.Error with the block and op it happened in.
"""
import contextlib
import os
import weakref

import numpy as np

from rill import _rill
from rill.fluid import core
from rill.fluid.framework import Program, Variable, default_main_program, dtype_to_np
from rill.fluid.compiler import CompiledProgram
from rill.proto import framework_pb2

__all__ = ["Executor", "global_scope", "scope_guard", "fetch_var"]

g_scope = core.Scope()


def global_scope():
    return g_scope


def switch_scope(scope):
    global g_scope
    ex, g_scope = g_scope, scope
    return ex


@contextlib.contextmanager
def scope_guard(scope):
    ex = switch_scope(scope)
    try:
        yield
    finally:
        switch_scope(ex)


def fetch_var(name, scope=None, return_numpy=True):
    """The value of variable ``name`` in ``scope`` (the global scope by default)."""
    scope = global_scope() if scope is None else scope
    var = scope.find_var(name)
    if var is None:
        raise LookupError("no variable %r in the scope: is it persistable, and has the program run?" % name)
    tensor = var.get_tensor()
    return np.array(tensor) if return_numpy else tensor


def _workers():
    env = os.environ.get("RILL_WORKERS")
    return int(env) if env else 1


def _names(values, what):
    out = []
    for v in values:
        if isinstance(v, Variable):
            out.append(v.name)
        elif isinstance(v, str):
            out.append(v)
        else:
            raise TypeError("%s takes Variables or names, got %r" % (what, v))
    return out


def _with_feed_fetch(desc, feed_names, fetch_names, feed_var_name, fetch_var_name):
    """A copy of ProgramDesc ``desc`` whose block 0 starts with a feed op per feed and ends
    with a fetch op per fetch; feed or fetch ops the program has already are dropped."""
    out = framework_pb2.ProgramDesc()
    out.CopyFrom(desc)
    block = out.blocks[0]
    ops = [op for op in block.ops if op.type not in ("feed", "fetch")]
    del block.ops[:]
    names = set(v.name for v in block.vars)
    for name, kind in ((feed_var_name, core.VarDesc.VarType.FEED_MINIBATCH),
                       (fetch_var_name, core.VarDesc.VarType.FETCH_LIST)):
        if name not in names:
            v = block.vars.add()
            v.name = name
            v.type.type = kind
            v.persistable = True
    for i, name in enumerate(feed_names):
        if name not in names:
            raise LookupError("feed %r: the program has no variable of that name" % name)
        _io_op(block.ops.add(), "feed", feed_var_name, name, i)
    block.ops.extend(ops)
    for i, name in enumerate(fetch_names):
        if not any(name in (v.name for v in b.vars) for b in out.blocks) and not any(
                name in a.arguments for op in ops for a in op.outputs):
            raise LookupError("fetch %r: the program has no variable of that name" % name)
        _io_op(block.ops.add(), "fetch", name, fetch_var_name, i)
    return out


def _io_op(op, kind, x, out, col):
    op.type = kind
    i = op.inputs.add()
    i.parameter = "X"
    i.arguments.append(x)
    o = op.outputs.add()
    o.parameter = "Out"
    o.arguments.append(out)
    a = op.attrs.add()
    a.name = "col"
    a.type = framework_pb2.INT
    a.i = col


def _data_vars_read(program):
    """The data variables (layers.data) that some op of ``program`` reads."""
    cached = program.__dict__.get("_rill_data_read")
    if cached is not None and cached[0] == program._version:
        return cached[1]
    data = set(n for n, v in program.global_block().vars.items() if v.is_data)
    read = set(n for b in program.blocks for op in b.ops for n in op.input_arg_names if n in data)
    program.__dict__["_rill_data_read"] = (program._version, read)
    return read


def _feed_array(name, value, dtype):
    """A feed given as a Python value (a list, a number) as an array of the variable's dtype,
    converted as numpy would but refusing what numpy would change silently: a float for an
    integer variable, an integer outside the variable's range."""
    array = np.asarray(value)
    if dtype is None or array.dtype == dtype:
        return array
    target = np.dtype(dtype)
    if target.kind in "iu":
        if array.dtype.kind == "f":
            raise ValueError("feed %r: %s values for a %s variable (convert them yourself if that is meant)"
                             % (name, array.dtype, target))
        if array.dtype.kind in "iu" and array.size:
            info = np.iinfo(target)
            low, high = array.min(), array.max()
            if low < info.min or high > info.max:
                bad = low if low < info.min else high
                raise ValueError("feed %r: %d is outside %s's range [%d, %d]" % (name, bad, target, info.min, info.max))
        if array.dtype == object:
            raise ValueError("feed %r: values of mixed kinds or too large for any integer type" % name)
    return array.astype(target)


class Executor(object):
    """Runs programs on ``place`` (CPUPlace, or CUDAPlace when a CUDA plugin is loaded)."""

    def __init__(self, place=None):
        self.place = place if place is not None else core.CPUPlace()
        if isinstance(self.place, core.CUDAPlace):
            if not core.is_compiled_with_cuda():
                raise RuntimeError("CUDAPlace: no loaded plugin drives CUDA devices (the math_cuda plugin is "
                                   "built where the CUDA toolkit is found)")
            count = core.get_cuda_device_count()
            if not 0 <= self.place.device_id < count:
                raise RuntimeError("CUDAPlace(%d): %d CUDA device(s) present" % (self.place.device_id, count))
        self._closed = False
        # program -> {(feed names, fetch names, holder names): (program version, prepared)}.
        # Weak: a program's prepared forms go with it, so an executor running a new Program
        # each iteration holds only the live ones.
        self._cache = weakref.WeakKeyDictionary()

    def close(self):
        """Drops every program this executor prepared, which ends what their ops hold: a
        trainer's send op tells its pservers it is done. The executor runs nothing after."""
        self._closed = True
        self._cache.clear()

    def _prepared(self, program, feed_names, fetch_names, feed_var_name, fetch_var_name):
        key = (tuple(feed_names), tuple(fetch_names), feed_var_name, fetch_var_name)
        forms = self._cache.setdefault(program, {})
        entry = forms.get(key)
        if entry is not None and entry[0] == program._version:
            return entry[1]
        desc = _with_feed_fetch(program.desc, feed_names, fetch_names, feed_var_name, fetch_var_name)
        device = getattr(self.place, "device_id", 0) if isinstance(self.place, core.CUDAPlace) else -1
        prepared = _rill.PreparedProgram(desc.SerializeToString(), _workers(), device)
        forms[key] = (program._version, prepared)
        return prepared

    def _prepared_count(self):
        """How many prepared programs this executor holds (for tests of the cache's bound)."""
        return sum(len(forms) for forms in self._cache.values())

    def run(self, program=None, feed=None, fetch_list=None, feed_var_name="feed", fetch_var_name="fetch",
            scope=None, return_numpy=True, use_program_cache=True):
        if self._closed:
            raise RuntimeError("the executor is closed")
        program = default_main_program() if program is None else program
        if isinstance(program, CompiledProgram):
            program = program.program
        if not isinstance(program, Program):
            raise TypeError("Executor.run takes a Program or CompiledProgram, got %r" % type(program).__name__)
        feed = {} if feed is None else feed
        if not isinstance(feed, dict):
            raise TypeError("feed must be a dict of variable name to value, got %r" % type(feed).__name__)
        if isinstance(fetch_list, (Variable, str)):
            fetch_list = [fetch_list]
        fetch_names = _names(fetch_list or [], "fetch_list")
        scope = global_scope() if scope is None else scope
        feed_names = list(feed.keys())
        for name in _data_vars_read(program):
            if name not in feed:
                raise ValueError("feed %r (a data variable the program reads) is not given" % name)
        prepared = self._prepared(program, feed_names, fetch_names, feed_var_name, fetch_var_name)
        block = program.global_block()
        for name, value_of in program._values_before_run.items():
            value = np.array([value_of()], dtype=dtype_to_np(block.vars[name].dtype))
            scope.var(name).get_tensor().set(value, core.CPUPlace())
        values = []
        for name in feed_names:
            value = feed[name]
            if not isinstance(value, (np.ndarray, core.LoDTensor)):
                var = block.vars.get(name)
                dtype = None
                if var is not None and var.dtype is not None:
                    dtype = dtype_to_np(var.dtype)
                value = _feed_array(name, value, dtype)
            values.append((name, value))
        return prepared.run(scope, values, not return_numpy)
