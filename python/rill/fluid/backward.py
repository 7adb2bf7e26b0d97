"""fluid.backward: append_backward, through the runtime's own pass (core/program/backward.h).

The gradient ops come from each op's schema; gradients are named "v@GRAD". Parameters are
the trainable Parameters of the global block unless ``parameter_list`` names them.
"""
from rill import _rill
from rill.fluid.framework import GRAD_VAR_SUFFIX as GRAD_SUFFIX, OP_ROLE_ATTR_NAME, OP_ROLE_VAR_ATTR_NAME, OpRole, \
    Parameter, VarType

__all__ = ["append_backward", "calc_gradient", "gradients"]


def append_backward(loss, parameter_list=None, no_grad_set=None, callbacks=None):
    """Appends the backward pass of ``loss`` to its program; returns [(param, grad)].
    Each of ``callbacks`` is called as callback(block=, context=) after each gradient op is
    in the block (its last op then), context mapping each gradient's name to its
    variable's, as Fluid calls them: fluid.clip.error_clip_callback appends error clipping."""
    program = loss.block.program
    if loss.block.idx != 0:
        raise ValueError("append_backward: the loss %s must be a variable of the global block" % loss.name)
    block = program.global_block()
    if parameter_list is not None:
        names = [p.name if isinstance(p, Parameter) else p for p in parameter_list]
    else:
        names = [p.name for p in block.all_parameters() if p.trainable]
    # Inputs a user asked gradients of (stop_gradient False on a variable no op writes, a
    # data layer say) get them too, as in Fluid; the result lists the parameters only.
    written = set(n for op in block.ops for n in op.output_arg_names)
    leaves = [n for n, v in block.vars.items() if not v.stop_gradient and not isinstance(v, Parameter)
              and not v.persistable and n not in written and n not in names]
    if no_grad_set:
        skip = set(v if isinstance(v, str) else v.name for v in no_grad_set)
        names = [n for n in names if n not in skip]
        leaves = [n for n in leaves if n not in skip]
    targets = names + leaves
    if not targets:
        # Nothing to differentiate by: Paddle still gives each variable on the loss's path
        # that does not stop gradients its gradient (and returns no pairs).
        on_path = dict.fromkeys(n for op in block.ops for n in op.output_arg_names)  # in program order
        targets = [n for n in on_path if n != loss.name and n in block.vars and not block.vars[n].stop_gradient]
        if not targets:
            return []
    first_grad_op = len(block.ops)
    pairs = _run_pass(program, loss.name, targets)
    _mark_roles(block, first_grad_op, loss.name, [(p, g) for p, g in pairs if p in names])
    if callbacks:
        with program._backward_role_guard():
            _replay_with_callbacks(block, first_grad_op, callbacks)
    return [(block.var(p), block.var(g)) for p, g in pairs if p in names]


def _mark_roles(block, first, loss_name, params_grads):
    """Gives the ops of the pass (those from `first` on) Fluid's roles: Backward, the loss
    gradient's fill Backward | Loss, and the loss's own op Forward | Loss; the op writing a
    parameter's gradient last lists [parameter, gradient] in its op_role_var."""
    loss_grad = loss_name + GRAD_SUFFIX
    filled = False
    for op in block.ops[first:]:
        loss_fill = not filled and loss_grad in op.output_arg_names
        filled = filled or loss_fill
        op._set_attr(OP_ROLE_ATTR_NAME, OpRole.Backward | (OpRole.Loss if loss_fill else 0))
    for op in reversed(block.ops[:first]):
        if loss_name in op.output_arg_names:
            op._set_attr(OP_ROLE_ATTR_NAME, op.attr(OP_ROLE_ATTR_NAME) & ~OpRole.NotSpecified | OpRole.Loss)
            break
    for param, grad in params_grads:
        for op in reversed(block.ops[first:]):
            if grad in op.output_arg_names:
                op._set_attr(OP_ROLE_VAR_ATTR_NAME, [param, grad] + list(op.attr(OP_ROLE_VAR_ATTR_NAME)))
                break


def _replay_with_callbacks(block, first, callbacks):
    """Puts the gradient ops from `first` on back into `block` one by one, calling each
    callback after each, so that what a callback appends runs right after that op."""
    grad_ops = block.ops[first:]
    del block.ops[first:]
    grad_to_var = {}
    for op in grad_ops:
        for name in op.output_arg_names:
            if name.endswith(GRAD_SUFFIX):
                grad_to_var[name] = name[:-len(GRAD_SUFFIX)]
    for op in grad_ops:
        block.ops.append(op)
        block.program._bump()
        for callback in callbacks:
            callback(block=block, context=grad_to_var)


def calc_gradient(targets, inputs, target_gradients=None, no_grad_set=None):
    """Appends the ops computing the gradients of ``targets`` (a Variable or a list) by
    ``inputs`` (likewise) and returns them, one per input (the one gradient itself for one
    input, as Fluid returns it): None for an input no target depends on. ``target_gradients`` (one per target, shaped like it) weight the targets;
    by default each is ones, as append_backward's loss gradient is. With several targets
    or given weights, the gradients are those of sum_i(reduce_sum(targets[i] * weights[i])),
    which is the same vector-Jacobian product."""
    from rill.fluid import layers
    targets = list(targets) if isinstance(targets, (list, tuple)) else [targets]
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    if target_gradients is not None:
        target_gradients = list(target_gradients) if isinstance(target_gradients, (list, tuple)) else \
            [target_gradients]
        if len(target_gradients) != len(targets):
            raise ValueError("calc_gradient: %d target_gradients for %d targets" % (len(target_gradients), len(targets)))
    program = targets[0].block.program
    if len(targets) == 1 and target_gradients is None:
        loss = targets[0]
    else:
        from rill.fluid.framework import program_guard
        with program_guard(program):
            weighted = []
            for i, t in enumerate(targets):
                g = target_gradients[i] if target_gradients is not None else None
                if g is not None:
                    g.stop_gradient = True
                weighted.append(layers.reduce_sum(t if g is None else layers.elementwise_mul(t, g)))
            loss = weighted[0] if len(weighted) == 1 else layers.sums(weighted)
    skip = set(v if isinstance(v, str) else v.name for v in (no_grad_set or ()))
    names = [v.name for v in inputs if v.name not in skip]
    block = program.global_block()
    first_grad_op = len(block.ops)
    grads = dict(_run_pass(program, loss.name, names))
    _mark_roles(block, first_grad_op, loss.name, [])
    result = [block.var(grads[v.name]) if v.name in grads else None for v in inputs]
    return result[0] if len(result) == 1 else result


def gradients(targets, inputs, target_gradients=None, no_grad_set=None):
    """calc_gradient, always returning a list (Fluid 1.x's fluid.gradients)."""
    result = calc_gradient(targets, inputs, target_gradients, no_grad_set)
    return result if isinstance(result, list) else [result]


def _run_pass(program, loss_name, sources):
    """Appends the runtime's backward pass of `loss_name` by `sources` to `program` and
    declares the gradients it writes; returns [(source, gradient name)] of those reached."""
    desc, pairs = _rill.append_backward(program.serialize_to_string(), loss_name, sources)
    from rill.proto import framework_pb2
    new_desc = framework_pb2.ProgramDesc()
    new_desc.ParseFromString(desc)
    program._load(new_desc)
    _declare_gradients(program.global_block())
    return pairs


_TABLE_GRADIENTS = ("W" + GRAD_SUFFIX, "Weight" + GRAD_SUFFIX)


def _declare_gradients(block):
    """Declares every gradient the pass writes and the block does not declare, shaped and
    typed like its variable ("w@GRAD" and "w@GRAD@RENAME@k" like "w"), except that the table
    gradient of an op with is_sparse (a lookup's W, nce's Weight, hsigmoid's W) is SelectedRows
    (Fluid's lookup_table_grad var type), and so is the sum of a table's sparse gradients."""
    for op in block.ops:
        for slot, names in op.outputs.items():
            for name in names:
                if block._find_var_recursive(name) is not None or GRAD_SUFFIX not in name:
                    continue
                base = block._find_var_recursive(name.split(GRAD_SUFFIX)[0])
                sparse = (op.attrs.get("is_sparse") is True and slot in _TABLE_GRADIENTS) or (
                    op.type == "sum" and all(_is_selected_rows(block, n) for n in op.inputs.get("X", [])))
                if base is None:
                    block.create_var(name=name)
                    continue
                block.create_var(name=name, shape=base.shape if base._shape is not None else None,
                                 dtype=base.dtype, lod_level=base.lod_level,
                                 type=VarType.SELECTED_ROWS if sparse else base.type)


def _is_selected_rows(block, name):
    var = block._find_var_recursive(name)
    return var is not None and var.type == VarType.SELECTED_ROWS
