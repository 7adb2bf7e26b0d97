"""fluid.dygraph's mode: ops that run as they are appended (Fluid 1.x's imperative mode,
Paddle 2.x's dynamic graph), on the same layers as the static graph.

    with fluid.dygraph.guard():
        x = fluid.dygraph.to_variable(np.ones([2, 3], "float32"))
        y = fluid.layers.relu(x * 2)
        y.numpy()

How: in this mode the default main and startup programs are eager programs. Each op a
layer appends to one (Block.append_op) runs at once on the mode's scope, one op at a time,
and its outputs take the shapes and dtypes the op gave them, so the next layer sees real
shapes. A Variable of an eager program reads its value with numpy(); backward() appends the
gradient ops of the program so far (the runtime's backward pass, as append_backward) and
runs them, after which gradient() reads each variable's gradient.

Invariants: every variable of an eager program lives in the mode's scope (its values stay
for as long as the mode lasts); the ops of an eager program are exactly the ops that ran,
in order, so backward differentiates what was computed.
"""
import contextlib

import numpy as np

from rill import _rill
from rill.fluid import core, framework, unique_name
from rill.fluid.desc import ProgramDesc

__all__ = ["guard", "to_variable", "enabled", "enable_dygraph", "disable_dygraph", "no_grad"]


class _Runner(object):
    """Runs ops of the eager programs on one scope, as they are appended."""

    def __init__(self):
        self.scope = core.Scope()
        self.suspended = 0
        self.without_grad = 0

    def ran(self, op):
        """Block.append_op's hook: runs `op` now, unless a pass appending many is under way."""
        if self.without_grad:
            for name in op.output_arg_names:
                if name in op.block.vars:
                    op.block.vars[name].stop_gradient = True
        if not self.suspended:
            self.run([op])

    def run(self, ops):
        for op in ops:
            desc = ProgramDesc()
            op._to_desc(desc.blocks[0].ops.add())
            for name in op.output_arg_names:  # made here, so the values stay in the mode's scope
                self.scope.var(name)
            _rill.PreparedProgram(desc.SerializeToString(), 1, -1).run(self.scope, [])
            for name in op.output_arg_names:
                self._take_shape(op.block, name)

    def _take_shape(self, block, name):
        var, held = block.vars.get(name), self.scope.find_var(name)
        if var is None or held is None or not held.is_initialized() or held.kind() != "tensor":
            return
        tensor = held.get_tensor()
        var._shape = list(tensor.shape())
        var._dtype = tensor.dtype()

    @contextlib.contextmanager
    def suspending(self):
        self.suspended += 1
        try:
            yield
        finally:
            self.suspended -= 1


_modes = []  # (runner, its main and startup programs, the previous main and startup programs), innermost last


def enabled():
    """Whether ops run as they are appended (dygraph mode)."""
    return bool(_modes)


def enable_dygraph(place=None):
    """Enters dygraph mode until disable_dygraph (Paddle 2.x's paddle.disable_static)."""
    runner = _Runner()
    main, startup = framework.Program(), framework.Program()
    main._eager = startup._eager = runner
    previous = framework.switch_main_program(main), framework.switch_startup_program(startup)
    _modes.append((runner, main, startup) + previous)


def resume_dygraph():
    """Makes the innermost dygraph mode's programs current again: a program_guard that was
    entered before the mode and left in it restored its static programs (Paddle's dygraph
    mode does not follow program_guard). Outside dygraph mode: nothing."""
    if _modes:
        _, main, startup, _, _ = _modes[-1]
        framework.switch_main_program(main)
        framework.switch_startup_program(startup)


def disable_dygraph():
    """Leaves the innermost dygraph mode (Paddle 2.x's paddle.enable_static); no-op outside."""
    if _modes:
        _, _, _, main, startup = _modes.pop()
        framework.switch_main_program(main)
        framework.switch_startup_program(startup)


@contextlib.contextmanager
def guard(place=None):
    """Dygraph mode for the `with` block (fluid.dygraph.guard); names start afresh in it."""
    enable_dygraph(place)
    try:
        with unique_name.guard():
            yield
    finally:
        disable_dygraph()


@contextlib.contextmanager
def no_grad():
    """The values ops compute in the block get no gradient (fluid.dygraph.no_grad): their
    outputs stop gradients."""
    runner = _modes[-1][0] if _modes else None
    if runner is not None:
        runner.without_grad += 1
    try:
        yield
    finally:
        if runner is not None:
            runner.without_grad -= 1


def _runner_of(var):
    runner = var.block.program._eager
    if runner is None:
        raise RuntimeError("%s.numpy(): a variable of a static program holds no value until an executor runs it; "
                           "values are read at once only in dygraph mode (fluid.dygraph.guard)" % var.name)
    return runner


def to_variable(value, name=None, zero_copy=None, dtype=None, stop_gradient=True):
    """A variable of the current eager program holding a copy of `value` (a numpy array,
    number or list; a Variable is returned as it is)."""
    if isinstance(value, framework.Variable):
        return value
    if not enabled():
        raise RuntimeError("to_variable works in dygraph mode only (fluid.dygraph.guard)")
    array = np.array(value)
    if dtype is not None:
        array = array.astype(framework.dtype_to_np(framework.convert_np_dtype_to_dtype_(dtype)))
    elif array.dtype == np.float64 and not isinstance(value, np.ndarray):
        array = array.astype(np.float32)  # a Python float is float32, as Paddle's default dtype
    block = framework.default_main_program().global_block()
    var = block.create_var(name=name or unique_name.generate("generated_tensor"), shape=array.shape,
                           dtype=array.dtype, stop_gradient=stop_gradient)
    _runner_of(var).scope.var(var.name).get_tensor().set(np.ascontiguousarray(array), core.CPUPlace())
    return var


def _numpy(self):
    """This variable's value (dygraph mode), a copy."""
    held = _runner_of(self).scope.find_var(self.name)
    if held is None or not held.is_initialized():
        raise RuntimeError("%s holds no value: no op has written it" % self.name)
    return np.array(held.get_tensor())


def _backward(self, retain_graph=False):
    """Computes the gradients of this variable (its sum, when it has several elements) with
    respect to every variable it was computed from that does not stop gradients, adding
    them to those an earlier backward() left (until clear_gradient), as Paddle's."""
    from rill.fluid.backward import append_backward
    runner = _runner_of(self)
    block = self.block
    first = len(block.ops)
    with runner.suspending():
        append_backward(self)
    ops = block.ops[first:]
    written = set(n for op in ops for n in op.output_arg_names)
    earlier = {}
    for name in written:
        held = runner.scope.find_var(name)
        if name.endswith(framework.GRAD_VAR_SUFFIX) and held is not None and held.is_initialized():
            earlier[name] = _gradient_value(held)
    runner.run(ops)
    for name, value in earlier.items():
        held = runner.scope.find_var(name)
        if isinstance(value, tuple):
            _add_rows(held.get_selected_rows(), *value)
        else:
            tensor = held.get_tensor()
            tensor.set(np.array(tensor) + value, core.CPUPlace())


def _gradient_value(held):
    """A held gradient as numpy: an array, or (values, rows) of a sparse one."""
    if held.kind() == "selected_rows":
        rows = held.get_selected_rows()
        return np.array(rows.get_tensor()), np.array(rows.rows(), np.int64)
    return np.array(held.get_tensor())


def _add_rows(selected, values, rows):
    """Adds sparse rows (values, row numbers) into SelectedRows `selected`, keeping its form:
    each row once, ascending."""
    all_rows = np.concatenate([np.array(selected.rows(), np.int64), rows])
    all_values = np.concatenate([np.array(selected.get_tensor()), values])
    merged_rows, where = np.unique(all_rows, return_inverse=True)
    merged = np.zeros((len(merged_rows),) + all_values.shape[1:], all_values.dtype)
    np.add.at(merged, where, all_values)
    selected.set_rows(merged_rows.tolist())
    selected.get_tensor().set(merged, core.CPUPlace())


def computed_gradients(block, parameter_list=None):
    """[(parameter, gradient)] of the trainable parameters of `block` (or those of
    parameter_list) that backward() gave a gradient: what an optimizer updates with in
    dygraph mode."""
    runner = block.program._eager
    if parameter_list is None:
        params = [p for p in block.all_parameters() if p.trainable]
    else:
        params = [block.var(p) if isinstance(p, str) else p for p in parameter_list]
    pairs = []
    for p in params:
        held = runner.scope.find_var(p.grad_name)
        if held is not None and held.is_initialized():
            grad = block.vars.get(p.grad_name) or block.create_var(name=p.grad_name, dtype=p.dtype, shape=p.shape)
            pairs.append((p, grad))
    return sorted(pairs, key=lambda pair: pair[0].name)


def _gradient(self):
    """The gradient backward() gave this variable, as a numpy array (a sparse one, an
    is_sparse embedding's, as Paddle's: (its rows' values, the row numbers)); None if none."""
    held = _runner_of(self).scope.find_var(self.grad_name)
    if held is None or not held.is_initialized():
        return None
    return _gradient_value(held)


def _grad(self):
    """The gradient backward() gave this variable, as a variable; None if none."""
    return self.block.vars.get(self.grad_name) if self._gradient() is not None else None


def _clear_gradient(self):
    """Zeroes the gradient: a dense one's values, a sparse one's rows (none left)."""
    held = _runner_of(self).scope.find_var(self.grad_name)
    if held is None or not held.is_initialized():
        return
    if held.kind() == "selected_rows":
        values, _ = _gradient_value(held)
        rows = held.get_selected_rows()
        rows.set_rows([])
        rows.get_tensor().set(np.zeros((0,) + values.shape[1:], values.dtype), core.CPUPlace())
        return
    tensor = held.get_tensor()
    tensor.set(np.zeros_like(np.array(tensor)), core.CPUPlace())


def patch_variable():
    """Gives Variable its dygraph methods: numpy, backward, gradient, grad, clear_gradient."""
    framework.Variable.numpy = _numpy
    framework.Variable.backward = _backward
    framework.Variable.gradient = _gradient
    framework.Variable._gradient = _gradient
    framework.Variable.grad = property(_grad)
    framework.Variable.clear_gradient = _clear_gradient
