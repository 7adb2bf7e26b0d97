"""fluid.concurrency: Go's channels, go blocks and select, as the seed documents write them.

    ch = fluid.make_channel(dtype=core.VarDesc.VarType.LOD_TENSOR, capacity=0)
    with fluid.Go():
        fluid.channel_send(ch, tensor)
    result, status = fluid.channel_recv(ch, result)
    with fluid.Select() as select:
        with select.case(fluid.channel_send, ch, x):
            ...
        with select.default():
            ...

The ops are the csp plugin's: channel_create, channel_send, channel_recv, channel_close,
go, and select with its cases laid out as Fluid's Select writes them (a block of cases,
each a fill_constant of its index, an equal with case_to_execute and a conditional_block).
"""
from rill.fluid import core, unique_name
from rill.fluid.framework import Variable
from rill.fluid.layer_helper import LayerHelper
from rill.fluid.layers.control_flow import BlockGuard, block_reads_and_writes
from rill.fluid.layers.tensor import fill_constant

__all__ = ["Go", "make_channel", "channel_send", "channel_recv", "channel_close", "Select"]


class Go(BlockGuard):
    """``with fluid.Go():`` — the block runs as a new task, concurrently with its parent."""

    def __init__(self, name=None):
        self.helper = LayerHelper("go", name=name)
        super(Go, self).__init__(self.helper.main_program)

    def __exit__(self, exc_type, exc_val, exc_tb):
        if exc_type is not None:
            return False
        self._construct_go_op()
        return super(Go, self).__exit__(exc_type, exc_val, exc_tb)

    def _construct_go_op(self):
        main_program = self.helper.main_program
        go_block = main_program.current_block()
        parent_block = main_program.block(go_block.parent_idx)
        reads, _ = block_reads_and_writes(go_block)
        x = [parent_block._find_var_recursive(n) for n in reads]
        parent_block.append_op(type="go", inputs={"X": [v for v in x if v is not None]},
                               attrs={"sub_block": go_block})


def make_channel(dtype, capacity=0):
    """A new channel of ``dtype`` values (a VarType: LOD_TENSOR, a tensor dtype or CHANNEL)
    holding up to ``capacity`` of them (0: unbuffered)."""
    helper = LayerHelper("channel_create", **locals())
    block = helper.main_program.current_block()
    channel = helper.create_variable(name=unique_name.generate("channel"), type=core.VarDesc.VarType.CHANNEL,
                                     persistable=True)
    block.append_op(type="channel_create", outputs={"Out": channel},
                    attrs={"data_type": int(dtype), "capacity": int(capacity)})
    return channel


def channel_send(channel, value, is_copy=False):
    """Sends ``value`` on ``channel``, blocking until it is received (or buffered); the value
    is moved (left empty) unless ``is_copy``. Sending on a closed channel is an error."""
    helper = LayerHelper("channel_send", **locals())
    if not isinstance(value, Variable):
        raise TypeError("channel_send sends a Variable")
    helper.main_program.current_block().append_op(
        type="channel_send", inputs={"Channel": channel, "X": value}, attrs={"copy": bool(is_copy)})


def channel_recv(channel, return_value):
    """Receives from ``channel`` into ``return_value``; returns (return_value, status), where
    status (bool [1]) is False when the channel is closed and empty."""
    helper = LayerHelper("channel_recv", **locals())
    status = helper.create_variable(name=unique_name.generate("status"), type=core.VarDesc.VarType.LOD_TENSOR,
                                    dtype=core.VarDesc.VarType.BOOL, shape=[1])
    helper.main_program.current_block().append_op(
        type="channel_recv", inputs={"Channel": channel}, outputs={"Out": return_value, "Status": status})
    return return_value, status


def channel_close(channel):
    """Closes ``channel``: receivers drain what is buffered, then get status False."""
    helper = LayerHelper("channel_close", **locals())
    helper.main_program.current_block().append_op(type="channel_close", inputs={"Channel": channel})


class _SelectCase(object):
    DEFAULT, SEND, RECEIVE = 0, 1, 2

    def __init__(self, select, idx, action=None, channel=None, value=None, is_copy=False):
        self.select = select
        self.idx = idx
        if action is None:
            self.kind = _SelectCase.DEFAULT
        elif action is channel_send:
            self.kind = _SelectCase.SEND
        elif action is channel_recv:
            self.kind = _SelectCase.RECEIVE
        else:
            raise TypeError("select.case takes fluid.channel_send or fluid.channel_recv, got %r" % (action,))
        if self.kind != _SelectCase.DEFAULT and not (isinstance(channel, Variable) and isinstance(value, Variable)):
            raise TypeError("select.case takes a channel Variable and a value Variable")
        self.channel = channel
        self.value = value
        self.is_copy = is_copy
        self.block = None

    def attr(self):
        if self.kind == _SelectCase.DEFAULT:
            return "%d,%d,," % (self.idx, self.kind)
        return "%d,%d,%s,%s" % (self.idx, self.kind, self.channel.name, self.value.name)


class _CaseGuard(BlockGuard):
    def __init__(self, case):
        super(_CaseGuard, self).__init__(case.select.helper.main_program)
        self.case = case

    def __enter__(self):
        super(_CaseGuard, self).__enter__()
        self.case.block = self.main_program.current_block()

    def __exit__(self, exc_type, exc_val, exc_tb):
        if exc_type is not None:
            return False
        return super(_CaseGuard, self).__exit__(exc_type, exc_val, exc_tb)


class Select(BlockGuard):
    """Go's select: ``with fluid.Select() as select:`` then ``with select.case(...)`` per
    case and ``with select.default():``."""

    def __init__(self, name=None):
        self.helper = LayerHelper("select", name=name)
        self.cases = []
        super(Select, self).__init__(self.helper.main_program)
        self.case_to_execute = fill_constant(shape=[1], dtype=core.VarDesc.VarType.INT32, value=-1)

    def __enter__(self):
        super(Select, self).__enter__()
        return self

    def case(self, channel_action_fn, channel, value, is_copy=False):
        """A send (``fluid.channel_send``) or receive (``fluid.channel_recv``) case. A send
        moves ``value`` unless ``is_copy``: then a copy of it, made just before the select
        runs, is what is sent."""
        if is_copy and channel_action_fn is channel_send and isinstance(value, Variable):
            parent = self.main_program.block(self.main_program.current_block().parent_idx)
            copied = parent.create_var(name=unique_name.generate(value.name + "_copy"), type=value.type,
                                       dtype=value.dtype, shape=value._shape, lod_level=value.lod_level)
            parent.append_op(type="assign", inputs={"X": [value]}, outputs={"Out": [copied]})
            value = copied
        c = _SelectCase(self, len(self.cases), channel_action_fn, channel, value, is_copy)
        self.cases.append(c)
        return _CaseGuard(c)

    def default(self):
        if any(c.kind == _SelectCase.DEFAULT for c in self.cases):
            raise ValueError("a select has at most one default case")
        c = _SelectCase(self, len(self.cases))
        self.cases.append(c)
        return _CaseGuard(c)

    def __exit__(self, exc_type, exc_val, exc_tb):
        if exc_type is not None:
            return False
        program = self.helper.main_program
        select_block = program.current_block()
        parent_block = program.block(select_block.parent_idx)
        # Ops the cases' blocks need in the select block: per case, its index, whether it
        # is the one chosen, and the conditional_block that runs it.
        case_blocks = [c.block for c in self.cases]
        for c in self.cases:
            program.current_block_idx = select_block.idx
            idx_var = fill_constant(shape=[1], dtype=core.VarDesc.VarType.INT32, value=c.idx)
            cond = select_block.create_var(name=unique_name.generate("select.case_cond"),
                                           dtype=core.VarDesc.VarType.BOOL, shape=[1])
            select_block.append_op(type="equal", inputs={"X": [idx_var], "Y": [self.case_to_execute]},
                                   outputs={"Out": [cond]})
            reads, written = block_reads_and_writes(c.block)
            params = [select_block._find_var_recursive(n) for n in reads]
            outs = [select_block._find_var_recursive(n) for n in written]
            select_block.append_op(type="conditional_block",
                                   inputs={"X": [cond], "Params": [p for p in params if p is not None]},
                                   outputs={"Out": [o for o in outs if o is not None]},
                                   attrs={"sub_block": c.block, "is_scalar_condition": True})
        x, out = [], []
        for c in self.cases:
            if c.kind == _SelectCase.DEFAULT:
                continue
            for v in ([c.channel, c.value] if c.kind == _SelectCase.SEND else [c.channel]):
                if v.name not in [e.name for e in x]:
                    x.append(v)
            if c.kind == _SelectCase.RECEIVE and c.value.name not in [e.name for e in out]:
                out.append(c.value)
        for b in case_blocks:
            reads, _ = block_reads_and_writes(b)
            for n in reads:
                v = parent_block._find_var_recursive(n)
                if v is not None and v.name not in [e.name for e in x]:
                    x.append(v)
        # Each case's own block beside sub_block (Rill's select then runs the chosen one
        # directly; Fluid's ignores the attribute and runs sub_block).
        attrs = {"sub_block": select_block, "cases": [c.attr() for c in self.cases]}
        if case_blocks:
            attrs["case_blocks"] = case_blocks
        parent_block.append_op(type="select", inputs={"X": x, "case_to_execute": self.case_to_execute},
                               outputs={"Out": out}, attrs=attrs)
        return super(Select, self).__exit__(exc_type, exc_val, exc_tb)
