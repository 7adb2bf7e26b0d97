"""Paddle's C++ desc API as far as three of its op tests use it to build a gradient op by
hand (batch_norm, instance_norm, layer_norm):

    grads, _ = core.get_grad_op_desc(op.desc, no_grad_set, [])
    block.desc.append_op().copy_from(grads[0])
    block.desc.var(name); block.desc.find_var(name).set_dtype(...)
    program._sync_with_cpp()

Views over rill.fluid's Program: the gradient op comes from the runtime's backward pass of
the op alone, appended to the block as it is copied, so there is nothing to sync. Any other
part of Paddle's desc API is a placeholder that skips the test using it."""
from rill import _rill
from rill.fluid import framework
from rill.proto import framework_pb2

GRAD = framework.GRAD_VAR_SUFFIX


def _unsupported(name):
    from paddle import Unsupported
    return Unsupported(name)


class OpDesc(object):
    """op.desc: the Operator it views."""

    def __init__(self, op):
        self.op = op

    def type(self):
        return self.op.type

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _unsupported("Operator.desc.%s (Paddle's OpDesc)" % attr)


class GradOpDesc(object):
    """One gradient OpDesc of get_grad_op_desc (a framework.proto OpDesc)."""

    def __init__(self, proto):
        self.proto = proto

    def type(self):
        return self.proto.type

    def input_arg_names(self):
        return [a for v in self.proto.inputs for a in v.arguments]

    def output_arg_names(self):
        return [a for v in self.proto.outputs for a in v.arguments]

    def infer_var_type(self, block_desc):
        """Rill's kernels give their outputs' types and shapes when they run."""

    infer_shape = infer_var_type


def get_grad_op_desc(op_desc, no_grad_set, sub_blocks):
    """([gradient OpDesc], {gradient name: variable name}) of the op op_desc views: the
    runtime's backward pass of that op alone, from its first output's gradient to the
    gradients of its inputs, but those whose gradient names no_grad_set lists."""
    op = op_desc.op
    schema = _rill.op_schema(op.type)
    program = framework_pb2.ProgramDesc()
    program.ParseFromString(op.block.program.serialize_to_string())
    block = program.blocks[op.block.idx]
    del block.ops[:]
    op._to_desc(block.ops.add())
    loss = op.output(schema["outputs"][0]["name"])[0]
    skip = set(n.decode() if isinstance(n, bytes) else n for n in no_grad_set)
    sources = [n for slot in op.inputs for n in op.input(slot) if n + GRAD not in skip and n not in skip]
    serialized, pairs = _rill.append_backward(program.SerializeToString(), loss, sources)
    result = framework_pb2.ProgramDesc()
    result.ParseFromString(serialized)
    grads = [GradOpDesc(o) for o in result.blocks[op.block.idx].ops if o.type == schema["grad_op_type"]]
    return grads, {g: v for v, g in pairs}


class VarDesc(object):
    def __init__(self, var):
        self.var = var

    def set_dtype(self, dtype):
        self.var._dtype = dtype
        self.var._changed()

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _unsupported("VarDesc.%s (Paddle's VarDesc)" % attr)


class NewOpDesc(object):
    """block.desc.append_op(): an op the block gets when copy_from gives it its desc."""

    def __init__(self, block):
        self.block = block

    def copy_from(self, grad):
        self.block.ops.append(framework._operator_from_desc(self.block, grad.proto))
        self.block.program._bump()


class BlockDesc(object):
    """block.desc: the Block it views."""

    def __init__(self, block):
        self.block = block

    def append_op(self):
        return NewOpDesc(self.block)

    def var(self, name):
        name = name.decode() if isinstance(name, bytes) else name
        if name not in self.block.vars:
            self.block.create_var(name=name)
        return VarDesc(self.block.vars[name])

    def find_var(self, name):
        name = name.decode() if isinstance(name, bytes) else name
        return VarDesc(self.block.vars[name]) if name in self.block.vars else None

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _unsupported("Block.desc.%s (Paddle's BlockDesc)" % attr)
