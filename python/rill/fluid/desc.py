"""fluid.core's ProgramDesc, BlockDesc, OpDesc and VarDesc: Fluid's C++ desc classes, as
views of framework.proto messages.

Each view reads and writes the message it wraps; two views are equal when they wrap the
same message. A ProgramDesc is framework.proto's message itself, with Fluid's methods
added: ``ProgramDesc()`` is a new program with its block 0, and ``Program.desc``, the
message a Program serializes to, is one too (``program.desc.block(0)``).
That message is a snapshot: a change made through it reaches the Program when
``Program.sync_with_cpp()`` loads it, and a change made through the Program first makes a
new snapshot, leaving earlier views to the old one (Fluid's desc is a single C++ object).
"""
from rill.proto import framework_pb2

__all__ = ["ProgramDesc", "BlockDesc", "OpDesc", "VarDesc", "numbers_by_name"]


def numbers_by_name(cls, enum):
    """Gives class `cls` each name of protobuf enum `enum` as an attribute holding its number."""
    for name, number in enum.items():
        setattr(cls, name, number)


class _View(object):
    __slots__ = ("_msg",)

    def __init__(self, msg):
        self._msg = msg

    def __eq__(self, other):
        return type(other) is type(self) and other._msg is self._msg

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return id(self._msg)

    def serialize_to_string(self):
        return self._msg.SerializeToString()


class VarDesc(_View):
    """A variable: its name, type, and per type its dtype(s), shape(s) and LoD level(s)."""

    class VarType(object):
        """framework.proto's variable types and dtypes (VarType.Type), by name."""

    __slots__ = ()

    def name(self):
        return self._msg.name

    def set_name(self, name):
        self._msg.name = name

    def type(self):
        return self._msg.type.type

    def set_type(self, var_type):
        self._msg.type.type = var_type

    def persistable(self):
        return self._msg.persistable

    def set_persistable(self, persistable):
        self._msg.persistable = persistable

    def _tensors(self, count=None):
        """[(TensorDesc, the message holding its LoD level or None)] of this variable's type:
        one for a tensor type, a reader's list for READER (made `count` long if given)."""
        t = self._msg.type
        kind = t.type
        if kind == self.VarType.READER:
            if count is not None:  # as Fluid's SetTensorDescNum: keep the first, grow or cut
                del t.reader.lod_tensor[count:]
                while len(t.reader.lod_tensor) < count:
                    t.reader.lod_tensor.add()
            return [(d.tensor, d) for d in t.reader.lod_tensor]
        if kind == self.VarType.LOD_TENSOR:
            return [(t.lod_tensor.tensor, t.lod_tensor)]
        if kind == self.VarType.LOD_TENSOR_ARRAY:
            return [(t.tensor_array.tensor, t.tensor_array)]
        if kind == self.VarType.SELECTED_ROWS:
            return [(t.selected_rows, None)]
        raise ValueError("variable %s of type %s has no tensor description" % (self._msg.name, kind))

    def _one(self):
        tensors = self._tensors()
        if len(tensors) != 1:
            raise ValueError("variable %s holds %d tensors: use the plural form" % (self._msg.name, len(tensors)))
        return tensors[0]

    def shape(self):
        return list(self._one()[0].dims)

    def set_shape(self, dims):
        tensor = self._one()[0]
        del tensor.dims[:]
        tensor.dims.extend(int(d) for d in dims)

    def dtype(self):
        return self._one()[0].data_type

    def set_dtype(self, dtype):
        self._one()[0].data_type = dtype

    def lod_level(self):
        holder = self._one()[1]
        if holder is None:
            raise ValueError("variable %s (SELECTED_ROWS) has no LoD level" % self._msg.name)
        return holder.lod_level

    def set_lod_level(self, level):
        holder = self._one()[1]
        if holder is None:
            raise ValueError("variable %s (SELECTED_ROWS) has no LoD level" % self._msg.name)
        holder.lod_level = level

    def _set_each(self, values, write):
        tensors = self._tensors()
        if self._msg.type.type == self.VarType.READER and len(tensors) != len(values):
            tensors = self._tensors(len(values))
        if len(tensors) != len(values):
            raise ValueError("variable %s holds %d tensors, given %d values" % (
                self._msg.name, len(tensors), len(values)))
        for pair, value in zip(tensors, values):
            write(pair, value)

    def shapes(self):
        return [list(t.dims) for t, _ in self._tensors()]

    def set_shapes(self, shapes):
        def write(pair, dims):
            del pair[0].dims[:]
            pair[0].dims.extend(int(d) for d in dims)
        self._set_each(shapes, write)

    def dtypes(self):
        return [t.data_type for t, _ in self._tensors()]

    def set_dtypes(self, dtypes):
        self._set_each(dtypes, lambda pair, dtype: setattr(pair[0], "data_type", dtype))

    def lod_levels(self):
        return [h.lod_level if h is not None else 0 for _, h in self._tensors()]

    def set_lod_levels(self, levels):
        self._set_each(levels, lambda pair, level: setattr(pair[1], "lod_level", level))


numbers_by_name(VarDesc.VarType, framework_pb2.VarType.Type)


class OpDesc(_View):
    """An op: its type, input and output slots (name lists) and attributes."""

    __slots__ = ()

    def type(self):
        return self._msg.type

    def set_type(self, op_type):
        self._msg.type = op_type

    @staticmethod
    def _slot(slots, name):
        for v in slots:
            if v.parameter == name:
                return v
        return None

    def input(self, name):
        v = self._slot(self._msg.inputs, name)
        return list(v.arguments) if v is not None else []

    def output(self, name):
        v = self._slot(self._msg.outputs, name)
        return list(v.arguments) if v is not None else []

    @classmethod
    def _set_slot(cls, slots, name, args):
        v = cls._slot(slots, name)
        if v is None:
            v = slots.add()
            v.parameter = name
        del v.arguments[:]
        v.arguments.extend(args)

    def set_input(self, name, args):
        self._set_slot(self._msg.inputs, name, args)

    def set_output(self, name, args):
        self._set_slot(self._msg.outputs, name, args)

    def input_names(self):
        return [v.parameter for v in self._msg.inputs]

    def output_names(self):
        return [v.parameter for v in self._msg.outputs]

    def input_arg_names(self):
        return [a for v in self._msg.inputs for a in v.arguments]

    def output_arg_names(self):
        return [a for v in self._msg.outputs for a in v.arguments]

    def _rename(self, slots, old, new):
        for v in slots:
            v.arguments[:] = [new if a == old else a for a in v.arguments]

    def rename_input(self, old, new):
        self._rename(self._msg.inputs, old, new)

    def rename_output(self, old, new):
        self._rename(self._msg.outputs, old, new)

    def _find_attr(self, name):
        for a in self._msg.attrs:
            if a.name == name:
                return a
        return None

    def has_attr(self, name):
        return self._find_attr(name) is not None

    def attr_names(self):
        return [a.name for a in self._msg.attrs]

    def attr_type(self, name):
        return self._get(name).type

    def _get(self, name):
        a = self._find_attr(name)
        if a is None:
            raise ValueError("op %s has no attribute %r" % (self._msg.type, name))
        return a

    def attr(self, name):
        from rill.fluid import framework
        value = framework._attr_value(self._get(name))
        return value.idx if isinstance(value, framework._BlockRef) else value

    def _replace(self, name):
        a = self._find_attr(name)
        if a is not None:
            a.Clear()
            return a
        return self._msg.attrs.add()

    def set_attr(self, name, value):
        from rill.fluid import framework
        kind = framework._infer_attr_type(value)
        framework._set_attr_desc(self._replace(name), name, value, kind, self._msg.type)

    def set_block_attr(self, name, block):
        self._replace(name).CopyFrom(framework_pb2.OpDesc.Attr(name=name, type=framework_pb2.BLOCK,
                                                               block_idx=block.id))

    def block_attr(self, name):
        return self._get(name).block_idx

    def remove_attr(self, name):
        attrs = self._msg.attrs
        for i, a in enumerate(attrs):
            if a.name == name:
                del attrs[i]
                return

    def check_attrs(self):
        """Fills in each attribute the op's schema declares a default for and the op lacks."""
        from rill.fluid import framework
        schema = framework.registered_schema(self._msg.type)
        for name, spec in schema["attrs"].items():
            if spec.get("default") is not None and not self.has_attr(name):
                framework._set_attr_desc(self._msg.attrs.add(), name, spec["default"], spec["type"], self._msg.type)


class BlockDesc(_View):
    """A block of a ProgramDesc: its variables and ops."""

    __slots__ = ("_program",)

    def __init__(self, msg, program):
        super(BlockDesc, self).__init__(msg)
        self._program = program  # the ProgramDesc message holding it

    @property
    def id(self):
        return self._msg.idx

    @property
    def parent(self):
        return self._msg.parent_idx

    def get_forward_block_idx(self):
        return self._msg.forward_block_idx

    def set_forward_block_idx(self, idx):
        self._msg.forward_block_idx = idx

    def var(self, name):
        """The variable `name` of this block, made (a LOD_TENSOR) if the block has none."""
        found = self._find(name)
        if found is not None:
            return found
        v = self._msg.vars.add()
        v.name = name
        v.type.type = VarDesc.VarType.LOD_TENSOR
        return VarDesc(v)

    def _find(self, name):
        for v in self._msg.vars:
            if v.name == name:
                return VarDesc(v)
        return None

    def has_var(self, name):
        return self._find(name) is not None

    def find_var(self, name):
        return self._find(name)

    def find_var_recursive(self, name):
        block = self
        while True:
            found = block._find(name)
            if found is not None or block.parent < 0:
                return found
            block = BlockDesc(self._program.blocks[block.parent], self._program)

    def all_vars(self):
        return [VarDesc(v) for v in self._msg.vars]

    def op_size(self):
        return len(self._msg.ops)

    def op(self, index):
        return OpDesc(self._msg.ops[index])

    def append_op(self):
        return OpDesc(self._msg.ops.add())

    def insert_op(self, index):
        self._msg.ops.insert(index, framework_pb2.OpDesc())
        return OpDesc(self._msg.ops[index])

    def prepend_op(self):
        return self.insert_op(0)

    def remove_op(self, start, end):
        """Removes ops [start, end)."""
        del self._msg.ops[start:end]


def ProgramDesc(source=None):
    """A program (framework.proto's ProgramDesc message, which the methods below extend):
    ``ProgramDesc()`` a new one with its block 0, ``ProgramDesc(other)`` a copy of `other`,
    ``ProgramDesc(bytes)`` one parsed from its serialized form."""
    msg = framework_pb2.ProgramDesc()
    if source is None:
        block = msg.blocks.add()
        block.idx, block.parent_idx = 0, -1
    elif isinstance(source, bytes):
        msg.ParseFromString(source)
    else:
        msg.CopyFrom(source)
    return msg


def _append_block(program, parent):
    block = program.blocks.add()
    block.idx = len(program.blocks) - 1
    block.parent_idx = parent.id
    return BlockDesc(block, program)


# Fluid's C++ ProgramDesc methods, on the message itself: Program.desc is one.
framework_pb2.ProgramDesc.block = lambda self, index: BlockDesc(self.blocks[index], self)
framework_pb2.ProgramDesc.num_blocks = lambda self: len(self.blocks)
framework_pb2.ProgramDesc.append_block = _append_block
framework_pb2.ProgramDesc.serialize_to_string = lambda self: self.SerializeToString()
