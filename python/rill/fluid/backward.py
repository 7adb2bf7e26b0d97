"""fluid.backward: append_backward, through the runtime's own pass (core/program/backward.h).

The gradient ops come from each op's schema; gradients are named "v@GRAD". Parameters are
the trainable Parameters of the global block unless ``parameter_list`` names them.
"""
from rill import _rill
from rill.fluid.framework import GRAD_VAR_SUFFIX as GRAD_SUFFIX, Parameter, VarType

__all__ = ["append_backward"]


def append_backward(loss, parameter_list=None, no_grad_set=None, callbacks=None):
    """Appends the backward pass of ``loss`` to its program; returns [(param, grad)]."""
    program = loss.block.program
    if loss.block.idx != 0:
        raise ValueError("append_backward: the loss %s must be a variable of the global block" % loss.name)
    block = program.global_block()
    if parameter_list is not None:
        names = [p.name if isinstance(p, Parameter) else p for p in parameter_list]
    else:
        names = [p.name for p in block.all_parameters() if p.trainable]
    if no_grad_set:
        skip = set(v if isinstance(v, str) else v.name for v in no_grad_set)
        names = [n for n in names if n not in skip]
    desc, pairs = _rill.append_backward(program.serialize_to_string(), loss.name, names)
    from rill.proto import framework_pb2
    new_desc = framework_pb2.ProgramDesc()
    new_desc.ParseFromString(desc)
    program._load(new_desc)
    _declare_gradients(block)
    return [(block.var(p), block.var(g)) for p, g in pairs]


def _declare_gradients(block):
    """Declares every gradient the pass writes and the block does not declare, shaped and
    typed like its variable ("w@GRAD" and "w@GRAD@RENAME@k" like "w"), except that a sparse
    lookup's table gradient is SelectedRows (Fluid's lookup_table_grad var type)."""
    for op in block.ops:
        for slot, names in op.outputs.items():
            for name in names:
                if block._find_var_recursive(name) is not None or GRAD_SUFFIX not in name:
                    continue
                base = block._find_var_recursive(name.split(GRAD_SUFFIX)[0])
                sparse = op.attrs.get("is_sparse") is True and slot == "W" + GRAD_SUFFIX
                if base is None:
                    block.create_var(name=name)
                    continue
                block.create_var(name=name, shape=base.shape if base._shape is not None else None,
                                 dtype=base.dtype, lod_level=base.lod_level,
                                 type=VarType.SELECTED_ROWS if sparse else base.type)
