"""fluid.framework: programs, blocks, variables and operators (Fluid 0.14's API).

A Program is Python objects (Block, Variable, Parameter, Operator) that serialize to
framework.proto's ProgramDesc (``Program.desc``), which the runtime runs. Every change made
through this API bumps ``Program._version``, so the serialized form (and the executor's
prepared program) is rebuilt only after a change. An op's attributes take the types its
schema declares (from the loaded plugins), else the type of the Python value. An op's desc
carries the attributes it is given and, as Fluid writes them, its role (``op_role``: the
program's role when the op was made, see ``Program.op_role``) and, for the ops of an
update or a parameter's gradient, ``op_role_var``. Reading an attribute (``attr``,
``attr_names``, ``has_attr``) also sees the schema's defaults, as Paddle's attribute
checker fills them in; the runtime fills in the same defaults when it runs the op.
"""
import collections
import contextlib
import numbers

import numpy as np
from google.protobuf import text_format

from rill import _rill
from rill.errors import InvalidArgumentError, NotFoundError
from rill.fluid import core, unique_name
from rill.proto import framework_pb2

__all__ = [
    "Block", "Variable", "Program", "Operator", "Parameter", "default_startup_program",
    "default_main_program", "program_guard", "switch_startup_program", "switch_main_program",
    "get_var", "convert_np_dtype_to_dtype_", "dtype_to_np", "OpRole", "OpProtoHolder",
]

GRAD_VAR_SUFFIX = "@GRAD"
TEMP_VAR_NAME = "@TEMP@"
ZERO_VAR_SUFFIX = "@ZERO"  # Fluid's suffix of a zero gradient's name
EMPTY_VAR_NAME = "@EMPTY@"  # an argument left out (abi.h's RILL_EMPTY_VAR_NAME)


def grad_var_name(name):
    """The name of variable `name`'s gradient."""
    return name + GRAD_VAR_SUFFIX
VarType = core.VarDesc.VarType

_NP_TO_VARTYPE = {
    np.dtype(np.bool_): VarType.BOOL, np.dtype(np.int16): VarType.INT16, np.dtype(np.int32): VarType.INT32,
    np.dtype(np.int64): VarType.INT64, np.dtype(np.float16): VarType.FP16, np.dtype(np.float32): VarType.FP32,
    np.dtype(np.float64): VarType.FP64, np.dtype(np.uint8): VarType.UINT8, np.dtype(np.int8): VarType.INT8,
}
_VARTYPE_TO_NP = {v: k for k, v in _NP_TO_VARTYPE.items()}
# Variable types whose desc requires a dtype.
_TENSOR_TYPES = (VarType.LOD_TENSOR, VarType.SELECTED_ROWS, VarType.LOD_TENSOR_ARRAY)


OpRole = core.op_proto_and_checker_maker.OpRole
OP_ROLE_ATTR_NAME = core.op_proto_and_checker_maker.kOpRoleAttrName()
OP_ROLE_VAR_ATTR_NAME = core.op_proto_and_checker_maker.kOpRoleVarAttrName()
# The attributes Fluid gives every op beside its schema's: (type, default).
_FRAMEWORK_ATTRS = collections.OrderedDict([
    (OP_ROLE_ATTR_NAME, (framework_pb2.INT, OpRole.NotSpecified)),
    (OP_ROLE_VAR_ATTR_NAME, (framework_pb2.STRINGS, [])),
])


def convert_np_dtype_to_dtype_(np_dtype):
    """framework.proto's dtype of a numpy dtype (or a name of one: 'float32', 'int64', ...)."""
    if isinstance(np_dtype, int) and not isinstance(np_dtype, bool):
        if np_dtype not in _VARTYPE_TO_NP:
            raise ValueError("%d is not a tensor dtype number of framework.proto" % np_dtype)
        return np_dtype
    dtype = np.dtype(np_dtype)
    if dtype not in _NP_TO_VARTYPE:
        raise ValueError("numpy dtype %s has no Rill dtype" % dtype)
    return _NP_TO_VARTYPE[dtype]


def dtype_to_np(dtype):
    return _VARTYPE_TO_NP[convert_np_dtype_to_dtype_(dtype)]


def _dtype_name(dtype):
    for name, value in vars(VarType).items():
        if value == dtype and not name.startswith("_"):
            return name
    return str(dtype)


class Variable(object):
    """A variable of a block: a name with a type, dtype, shape and flags.

    Made by ``Block.create_var`` (or a layer); a second create_var of a name the block has
    returns a Variable for the same variable, updating what it gives.
    """

    def __init__(self, block, type=VarType.LOD_TENSOR, name=None, shape=None, dtype=None, lod_level=None,
                 capacity=None, persistable=None, error_clip=None, stop_gradient=False, is_data=False,
                 need_check_feed=False, **kwargs):
        self.block = block
        self.error_clip = error_clip
        self._name = name if name is not None else unique_name.generate(TEMP_VAR_NAME)
        self.type = type
        self._shape = None if shape is None else [int(d) for d in shape]
        self._dtype = None if dtype is None else convert_np_dtype_to_dtype_(dtype)
        self._lod_level = lod_level if lod_level is not None else 0
        self._capacity = capacity
        self._persistable = bool(persistable)
        self._stop_gradient = stop_gradient
        self.is_data = is_data
        # Feeds of it are checked against its dtype and shape (fluid.data's; Paddle checks
        # no other variable's feed).
        self.need_check_feed = need_check_feed
        self.op = None  # the op that last wrote it, for Fluid's code that looks

    def set_error_clip(self, error_clip):
        """Clip this variable's gradient (fluid.clip.ErrorClipByValue) when append_backward
        runs with fluid.clip.error_clip_callback."""
        self.error_clip = error_clip

    def _merge(self, shape, dtype, lod_level, persistable, type):
        """A second declaration of this variable: what it gives must agree with the first."""
        if shape is not None:
            shape = [int(d) for d in shape]
            if self._shape is not None and self._shape != shape:
                raise InvalidArgumentError("variable %s is declared with shape %s, now %s" %
                                           (self._name, self._shape, shape), 1)
            self._shape = shape
        if dtype is not None:
            dtype = convert_np_dtype_to_dtype_(dtype)
            if self._dtype is not None and self._dtype != dtype:
                raise InvalidArgumentError("variable %s is declared as %s, now %s" %
                                           (self._name, _dtype_name(self._dtype), _dtype_name(dtype)), 1)
            self._dtype = dtype
        if lod_level is not None:
            self._lod_level = lod_level
        if persistable is not None:
            self._persistable = bool(persistable)
        if type is not None:
            self.type = type
        self._changed()

    def _changed(self):
        self.block.program._bump()

    @property
    def name(self):
        return self._name

    @name.setter
    def name(self, new_name):
        self.block._rename_var(self._name, new_name)

    @property
    def grad_name(self):
        """The name of this variable's gradient (Fluid 1.x's)."""
        return self._name + GRAD_VAR_SUFFIX

    @property
    def shape(self):
        """A tuple; a list in dygraph mode, as Paddle's dynamic graph gives it."""
        shape = tuple(self._shape) if self._shape is not None else ()
        return list(shape) if self.block.program._eager is not None else shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def lod_level(self):
        return self._lod_level

    @property
    def persistable(self):
        return self._persistable

    @persistable.setter
    def persistable(self, value):
        self._persistable = bool(value)
        self._changed()

    @property
    def stop_gradient(self):
        return self._stop_gradient

    @stop_gradient.setter
    def stop_gradient(self, value):
        self._stop_gradient = bool(value)

    def _to_desc(self, desc):
        desc.name = self._name
        desc.persistable = self.persistable
        if self.need_check_feed:
            desc.need_check_feed = True
        desc.type.type = self.type
        if self.type in (VarType.LOD_TENSOR, VarType.SELECTED_ROWS, VarType.LOD_TENSOR_ARRAY):
            tensor = {VarType.LOD_TENSOR: lambda: desc.type.lod_tensor.tensor,
                      VarType.SELECTED_ROWS: lambda: desc.type.selected_rows,
                      VarType.LOD_TENSOR_ARRAY: lambda: desc.type.tensor_array.tensor}[self.type]()
            tensor.data_type = self._dtype if self._dtype is not None else VarType.FP32
            tensor.dims.extend(self._shape or [])
            if self.type == VarType.LOD_TENSOR and self._lod_level:
                desc.type.lod_tensor.lod_level = self._lod_level
            if self.type == VarType.LOD_TENSOR_ARRAY and self._lod_level:
                desc.type.tensor_array.lod_level = self._lod_level
        elif self.type == VarType.CHANNEL:
            if self._dtype is not None:
                desc.type.channel.data_type = self._dtype
            if self._capacity is not None:
                desc.type.channel.capacity = self._capacity

    def _untyped(self):
        """Whether this is a tensor variable without a dtype, which framework.proto refuses."""
        return self._dtype is None and self.type in _TENSOR_TYPES

    def to_string(self, throw_on_error=False, with_details=False):
        if throw_on_error and self._untyped():
            raise ValueError("variable %s has no dtype" % self._name)
        desc = framework_pb2.VarDesc()
        self._to_desc(desc)
        text = text_format.MessageToString(desc)
        if with_details:
            text += "stop_gradient: %s\n" % self.stop_gradient
        return text

    def __str__(self):
        return self.to_string()

    __repr__ = __str__

    def astype(self, dtype):
        from rill.fluid.layers import cast
        return cast(self, dtype)


class Parameter(Variable):
    """A persistable variable that training updates (unless ``trainable`` is False)."""

    # What a parameter carries beside its variable: name -> default (a callable makes it).
    # need_clip (Paddle 2.x): whether an optimizer's grad_clip applies to it.
    ATTRIBUTES = {"trainable": True, "optimize_attr": lambda: {"learning_rate": 1.0}, "regularizer": None,
                  "gradient_clip_attr": None, "do_model_average": None, "need_clip": True}

    def __init__(self, block, shape, dtype, **kwargs):
        if shape is None or dtype is None:
            raise ValueError("a Parameter needs a shape and a dtype")
        for d in shape:
            if d < 0:
                raise ValueError("a Parameter's shape must be known: %s has %s" % (kwargs.get("name"), list(shape)))
        kwargs["persistable"] = True
        super(Parameter, self).__init__(block, shape=shape, dtype=dtype, **kwargs)
        for attr, default in Parameter.ATTRIBUTES.items():
            setattr(self, attr, kwargs.get(attr, default() if callable(default) else default))


class Operator(object):
    """An op of a block: its type, input and output slots (name lists) and attributes."""

    def __init__(self, block, type=None, inputs=None, outputs=None, attrs=None):
        self.block = block
        if type is None:
            raise ValueError("`type` to initialized an Operator can not be None.")  # Paddle 2.1's words
        self.type = type
        schema = _rill.op_schema(type)
        if schema is None:
            raise NotFoundError(_rill.unknown_op_message(type), 2)
        self._schema = schema
        self.inputs = self._slots(inputs, schema["inputs"], "input")
        self.outputs = self._slots(outputs, schema["outputs"], "output")
        self.attrs = collections.OrderedDict()
        for name, value in (attrs or {}).items():
            if value is not None:
                self.attrs[name] = value
        program = block.program
        self.attrs.setdefault(OP_ROLE_ATTR_NAME, program._current_role)
        if program._op_role_var and OP_ROLE_VAR_ATTR_NAME not in self.attrs:
            self.attrs[OP_ROLE_VAR_ATTR_NAME] = list(program._op_role_var)
        # For an op read from a ProgramDesc: its attributes' types there, and those Python
        # has no value for (SCALAR, VAR, ...), kept as messages: written back as they were.
        self._attr_types = {}
        self._raw_attrs = collections.OrderedDict()
        for names in self.outputs.values():
            for n in names:
                v = block._find_var_recursive(n)
                if v is not None:
                    v.op = self

    def _slots(self, given, declared, kind):
        slots = collections.OrderedDict()
        known = {s["name"]: s for s in declared}
        for slot, args in (given or {}).items():
            if slot not in known:
                raise InvalidArgumentError("op %s has no %s slot %r (it has: %s)" % (
                    self.type, kind, slot, ", ".join(sorted(known)) or "none"), 1)
            if args is None:
                continue
            if not isinstance(args, (list, tuple)):
                args = [args]
            names = []
            for a in args:
                if isinstance(a, Variable):
                    names.append(a.name)
                elif isinstance(a, str):
                    names.append(a)
                else:
                    raise TypeError("op %s %s %s: expected a Variable or a name, got %r" % (self.type, kind, slot, a))
            if len(names) > 1 and not known[slot]["duplicable"]:
                raise InvalidArgumentError("op %s's %s slot %s takes one variable, got %d (%s)" % (
                    self.type, kind, slot, len(names), ", ".join(names)), 1)
            slots[slot] = names
        return slots

    def input(self, name):
        return list(self.inputs.get(name, []))

    def output(self, name):
        return list(self.outputs.get(name, []))

    @property
    def input_names(self):
        return list(self.inputs.keys())

    @property
    def output_names(self):
        return list(self.outputs.keys())

    @property
    def input_arg_names(self):
        return [n for names in self.inputs.values() for n in names]

    @property
    def output_arg_names(self):
        return [n for names in self.outputs.values() for n in names]

    @property
    def idx(self):
        """This op's position in its block."""
        for i, op in enumerate(self.block.ops):
            if op is self:
                return i
        raise ValueError("op %s is no longer in its block" % self.type)

    def _defaults(self):
        """{name: default} of the attributes this op was not given: its schema's (those with
        a default) and Fluid's framework attributes."""
        defaults = collections.OrderedDict(
            (name, spec["default"]) for name, spec in self._schema["attrs"].items()
            if name not in self.attrs and name not in self._raw_attrs and spec.get("default") is not None)
        for name, (_, default) in _FRAMEWORK_ATTRS.items():
            if name not in self.attrs:
                defaults[name] = list(default) if isinstance(default, list) else default
        return defaults

    def has_attr(self, name):
        return name in self.attrs or name in self._raw_attrs or name in self._defaults()

    def attr(self, name):
        """The attribute's value: as given, else its default (None for one the op has not)."""
        if name in self.attrs:
            return self.attrs[name]
        return self._defaults().get(name)

    @property
    def attr_names(self):
        return list(self.attrs.keys()) + list(self._raw_attrs.keys()) + list(self._defaults().keys())

    def attr_type(self, name):
        """The attribute's framework.proto type (core.AttrType): as its desc or schema says,
        else that of its Python value."""
        if name in self._raw_attrs:
            return self._raw_attrs[name].type
        if name in self._attr_types:
            return self._attr_types[name]
        declared = self._schema["attrs"].get(name)
        if declared is not None:
            return declared["type"]
        if name in _FRAMEWORK_ATTRS:
            return _FRAMEWORK_ATTRS[name][0]
        if name not in self.attrs:
            raise ValueError("op %s has no attribute %r" % (self.type, name))
        return _infer_attr_type(self.attrs[name])

    def all_attrs(self):
        every = self._defaults()
        every.update(self.attrs)
        return dict(every)

    def _set_attr(self, name, value):
        self.attrs[name] = value
        self._attr_types.pop(name, None)
        self._raw_attrs.pop(name, None)
        self.block.program._bump()

    set_attr = _set_attr

    def _rename_input(self, old, new):
        for names in self.inputs.values():
            names[:] = [new if n == old else n for n in names]
        self.block.program._bump()

    def _rename_output(self, old, new):
        for names in self.outputs.values():
            names[:] = [new if n == old else n for n in names]
        self.block.program._bump()

    def _to_desc(self, desc):
        desc.type = self.type
        for slot, names in self.inputs.items():
            v = desc.inputs.add()
            v.parameter = slot
            v.arguments.extend(names)
        for slot, names in self.outputs.items():
            v = desc.outputs.add()
            v.parameter = slot
            v.arguments.extend(names)
        declared = self._schema["attrs"]
        for name, value in self.attrs.items():
            kind = self._attr_types.get(name, declared.get(name, {}).get("type"))
            if kind is None and name in _FRAMEWORK_ATTRS:
                kind = _FRAMEWORK_ATTRS[name][0]
            _set_attr_desc(desc.attrs.add(), name, value, kind, self.type)
        for raw in self._raw_attrs.values():
            desc.attrs.add().CopyFrom(raw)

    def to_string(self, throw_on_error=False):
        desc = framework_pb2.OpDesc()
        self._to_desc(desc)
        return text_format.MessageToString(desc)

    def __str__(self):
        return self.to_string()

    __repr__ = __str__


_A = framework_pb2


def _infer_attr_type(value):
    if isinstance(value, Block):
        return _A.BLOCK
    if isinstance(value, (bool, np.bool_)):
        return _A.BOOLEAN
    if isinstance(value, (int, np.integer)):
        return _A.INT if -2 ** 31 <= int(value) < 2 ** 31 else _A.LONG
    if isinstance(value, (float, np.floating)):
        return _A.FLOAT
    if isinstance(value, str):
        return _A.STRING
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, Block) for v in value) and value:
            return _A.BLOCKS
        if all(isinstance(v, (bool, np.bool_)) for v in value) and value:
            return _A.BOOLEANS
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
            return _A.INTS if all(-2 ** 31 <= int(v) < 2 ** 31 for v in value) else _A.LONGS
        if all(isinstance(v, (int, float, np.integer, np.floating)) for v in value):
            return _A.FLOATS
        if all(isinstance(v, str) for v in value):
            return _A.STRINGS
    raise TypeError("attribute value %r has no framework.proto attribute type" % (value,))


def _set_attr_desc(a, name, value, declared, op_type):
    a.name = name
    kind = declared if declared is not None else _infer_attr_type(value)
    a.type = kind
    try:
        if kind == _A.INT:
            a.i = int(value)
        elif kind == _A.LONG:
            a.l = int(value)
        elif kind == _A.FLOAT:
            a.f = float(value)
        elif kind == _A.FLOAT64:
            a.float64 = float(value)
        elif kind == _A.FLOAT64S:
            a.float64s.extend(float(v) for v in value)
        elif kind == _A.STRING:
            a.s = value
        elif kind == _A.BOOLEAN:
            a.b = bool(value)
        elif kind == _A.INTS:
            a.ints.extend(int(v) for v in value)
        elif kind == _A.LONGS:
            a.longs.extend(int(v) for v in value)
        elif kind == _A.FLOATS:
            a.floats.extend(float(v) for v in value)
        elif kind == _A.STRINGS:
            a.strings.extend(value)
        elif kind == _A.BOOLEANS:
            a.bools.extend(bool(v) for v in value)
        elif kind == _A.BLOCK:
            a.block_idx = value.idx if isinstance(value, Block) else int(value)
        elif kind == _A.BLOCKS:
            a.blocks_idx.extend(v.idx if isinstance(v, Block) else int(v) for v in value)
        else:
            raise TypeError("attribute type %d is not supported from Python" % kind)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError("op %s attribute %s = %r: %s" % (op_type, name, value, e), 1)


def _attr_value(a):
    kind = a.type
    return {
        _A.INT: lambda: a.i, _A.LONG: lambda: a.l, _A.FLOAT: lambda: a.f, _A.STRING: lambda: a.s,
        _A.BOOLEAN: lambda: a.b, _A.INTS: lambda: list(a.ints), _A.LONGS: lambda: list(a.longs),
        _A.FLOATS: lambda: list(a.floats), _A.STRINGS: lambda: list(a.strings),
        _A.BOOLEANS: lambda: list(a.bools), _A.BLOCK: lambda: _BlockRef(a.block_idx),
        _A.BLOCKS: lambda: [_BlockRef(i) for i in a.blocks_idx], _A.FLOAT64: lambda: a.float64,
        _A.FLOAT64S: lambda: list(a.float64s),
    }.get(kind, lambda: None)()


class _BlockRef(object):
    """A BLOCK attribute read from a ProgramDesc, resolved to its Block on load."""

    def __init__(self, idx):
        self.idx = idx


class Block(object):
    """A block of a program: variables by name and ops in order."""

    def __init__(self, program, idx, parent_idx=-1):
        self.program = program
        self.idx = idx
        self.parent_idx = parent_idx
        self.forward_block_idx = -1
        self.vars = collections.OrderedDict()
        self.ops = []

    def __str__(self):
        return self.to_string()

    def to_string(self, throw_on_error=False, with_details=False):
        desc = framework_pb2.BlockDesc()
        self._to_desc(desc)
        return text_format.MessageToString(desc)

    def create_var(self, *args, **kwargs):
        initializer = kwargs.pop("initializer", None)
        v = self._create_var(*args, **kwargs)
        if initializer is not None:
            initializer(v, self)
        return v

    def _create_var(self, *args, **kwargs):
        name = kwargs.get("name")
        if name is not None and name in self.vars:
            v = self.vars[name]
            v._merge(kwargs.get("shape"), kwargs.get("dtype"), kwargs.get("lod_level"), kwargs.get("persistable"),
                     kwargs.get("type"))
            return v
        v = Variable(self, *args, **kwargs)
        self.vars[v.name] = v
        self.program._bump()
        return v

    def create_parameter(self, *args, **kwargs):
        global_block = self.program.global_block()
        name = kwargs.get("name")
        initializer = kwargs.pop("initializer", None)
        if name is not None and name in global_block.vars:
            # A second declaration: the same Parameter, taking the attributes it gives (as
            # Paddle's new Parameter object over the same variable does), and (as in Fluid)
            # its initializer appended again, the later one then running first.
            p = global_block.vars[name]
            if not isinstance(p, Parameter):
                raise InvalidArgumentError("%s is a variable of the block, not a parameter" % name, 1)
            p._merge(kwargs.get("shape"), kwargs.get("dtype"), None, None, None)
            for attr in Parameter.ATTRIBUTES:
                if attr in kwargs:
                    setattr(p, attr, kwargs[attr])
            if initializer is not None:
                initializer(p, self)
            return p
        param = Parameter(global_block, *args, **kwargs)
        global_block.vars[param.name] = param
        self.program._bump()
        if initializer is not None:
            initializer(param, self)
        return param

    def has_var(self, name):
        return name in self.vars

    def var(self, name):
        if name not in self.vars:
            raise NotFoundError("block %d has no variable %r" % (self.idx, name), 2)
        return self.vars[name]

    def _find_var_recursive(self, name):
        block = self
        while True:
            if name in block.vars:
                return block.vars[name]
            if block.parent_idx < 0:
                return None
            block = self.program.block(block.parent_idx)

    def var_recursive(self, name):
        v = self._find_var_recursive(name)
        if v is None:
            raise NotFoundError("no variable %r in block %d or the blocks around it" % (name, self.idx), 2)
        return v

    _var_recursive = var_recursive

    def all_parameters(self):
        return [v for v in self.vars.values() if isinstance(v, Parameter)]

    def iter_parameters(self):
        return iter(self.all_parameters())

    def _rename_var(self, old, new):
        if new in self.vars:
            raise InvalidArgumentError("block %d already has a variable %r" % (self.idx, new), 1)
        v = self.vars.pop(old)
        v._name = new
        self.vars[new] = v
        for op in self.ops:
            op._rename_input(old, new)
            op._rename_output(old, new)
        self.program._bump()

    def append_op(self, *args, **kwargs):
        return self.insert_op(len(self.ops), *args, **kwargs)

    def prepend_op(self, *args, **kwargs):
        return self.insert_op(0, *args, **kwargs)

    def insert_op(self, index, *args, **kwargs):
        op = Operator(self, *args, **kwargs)
        self.ops.insert(index, op)
        self.program._bump()
        if self.program._eager is not None:
            self.program._eager.ran(op)
        return op

    def remove_op(self, start, end=None):
        del self.ops[start:(start + 1 if end is None else end)]
        self.program._bump()

    def _to_desc(self, desc):
        desc.idx = self.idx
        desc.parent_idx = self.parent_idx
        if self.forward_block_idx != -1:
            desc.forward_block_idx = self.forward_block_idx
        for v in self.vars.values():
            v._to_desc(desc.vars.add())
        for op in self.ops:
            op._to_desc(desc.ops.add())

    def _load(self, desc):
        """Replaces this block's variables and ops with those of BlockDesc ``desc``; the
        Variable objects of names it keeps stay the same objects."""
        old = self.vars
        self.vars = collections.OrderedDict()
        for vd in desc.vars:
            v = old.get(vd.name)
            if v is None:
                v = _variable_from_desc(self, vd)
            self.vars[vd.name] = v
        self.ops = []
        for od in desc.ops:
            self.ops.append(_operator_from_desc(self, od))


def _variable_from_desc(block, vd):
    t = vd.type.type
    shape, dtype, lod_level, capacity = None, None, 0, None
    if t == VarType.LOD_TENSOR:
        shape, dtype = list(vd.type.lod_tensor.tensor.dims), vd.type.lod_tensor.tensor.data_type
        lod_level = vd.type.lod_tensor.lod_level
    elif t == VarType.SELECTED_ROWS:
        shape, dtype = list(vd.type.selected_rows.dims), vd.type.selected_rows.data_type
    elif t == VarType.LOD_TENSOR_ARRAY:
        shape, dtype = list(vd.type.tensor_array.tensor.dims), vd.type.tensor_array.tensor.data_type
    elif t == VarType.CHANNEL:
        dtype, capacity = vd.type.channel.data_type, vd.type.channel.capacity
    if dtype is not None and dtype not in _VARTYPE_TO_NP and t != VarType.CHANNEL:
        dtype = None
    return Variable(block, type=t, name=vd.name, shape=shape, dtype=dtype, lod_level=lod_level,
                    capacity=capacity, persistable=vd.persistable, need_check_feed=vd.need_check_feed)


def _operator_from_desc(block, od):
    op = Operator.__new__(Operator)
    op.block = block
    op.type = od.type
    op._schema = _rill.op_schema(od.type) or {"inputs": [], "outputs": [], "attrs": {}}
    op.inputs = collections.OrderedDict((v.parameter, list(v.arguments)) for v in od.inputs)
    op.outputs = collections.OrderedDict((v.parameter, list(v.arguments)) for v in od.outputs)
    op.attrs = collections.OrderedDict()
    op._attr_types = {}
    op._raw_attrs = collections.OrderedDict()
    for a in od.attrs:
        value = _attr_value(a)
        if value is None:
            raw = framework_pb2.OpDesc.Attr()
            raw.CopyFrom(a)
            op._raw_attrs[a.name] = raw
        else:
            op.attrs[a.name] = value
            op._attr_types[a.name] = a.type
    return op


class Program(object):
    """A Fluid program: blocks, block 0 the global one."""

    def __init__(self):
        self.blocks = [Block(self, 0)]
        self.current_block_idx = 0
        self._seed = 0
        self._version = 0
        self._desc_cache = (None, None)  # (version, ProgramDesc)
        self._current_role = OpRole.Forward
        self._op_role_var = []
        # dygraph's runner in dygraph mode (dygraph/base.py): each op appended runs at once.
        self._eager = None
        # {variable name: callable}: Executor.run sets each of these persistable [1]
        # variables to its callable's value before it runs the program (a learning-rate
        # schedule's current rate, paddle.optimizer.lr).
        self._values_before_run = {}

    def _bump(self):
        self._version += 1

    @property
    def random_seed(self):
        """The seed of the program's random ops whose own seed is 0 (0: a fresh one each run)."""
        return self._seed

    @random_seed.setter
    def random_seed(self, seed):
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise ValueError("Program.random_seed must be an integer, got %r" % (seed,))
        self._seed = int(seed)

    def all_parameters(self):
        """The program's parameters (those of its global block)."""
        return self.global_block().all_parameters()

    def _copy_param_info_from(self, other):
        """Gives the variables of the global block that are parameters of `other`'s global
        block (by name) their Parameter kind and attributes, as Paddle's (a program parsed
        from a desc knows no parameters)."""
        if not isinstance(other, Program):
            raise TypeError("_copy_param_info_from should be invoked with Program, got %s" % type(other).__name__)
        mine = self.global_block().vars
        for name, v in other.global_block().vars.items():
            if isinstance(v, Parameter) and name in mine:
                mine[name].__class__ = Parameter
                for attr in Parameter.ATTRIBUTES:
                    setattr(mine[name], attr, getattr(v, attr))

    @property
    def op_role(self):
        """The role (OpRole) the ops appended now get: Forward unless a guard says otherwise."""
        return self._current_role

    @op_role.setter
    def op_role(self, role):
        self._current_role = role

    @property
    def op_role_var(self):
        """The variables the ops appended now are for (their ``op_role_var``): an update's
        parameter and gradient."""
        return self._op_role_var

    @op_role_var.setter
    def op_role_var(self, var_name):
        self._op_role_var = [var_name]

    @contextlib.contextmanager
    def _role_guard(self, role, variables=None):
        """Ops appended inside get role `role` and, if given, `variables` (Variables or names)
        as their op_role_var."""
        saved = self._current_role, self._op_role_var
        self._current_role = role
        if variables is not None:
            variables = variables if isinstance(variables, (list, tuple)) else [variables]
            self._op_role_var = [v.name if isinstance(v, Variable) else v for v in variables]
        try:
            yield
        finally:
            self._current_role, self._op_role_var = saved

    def optimized_guard(self, param_and_grads):
        """Ops appended inside are an update (OpRole.Optimize) of ``param_and_grads``: a
        variable, or a (parameter, gradient) pair, as Fluid's optimizers pass them."""
        return self._role_guard(OpRole.Optimize, param_and_grads)

    _optimized_guard = optimized_guard

    def _backward_role_guard(self):
        return self._role_guard(OpRole.Backward)

    @property
    def desc(self):
        """The program as a framework.proto ProgramDesc (a fresh message after a change)."""
        version, desc = self._desc_cache
        if version != self._version:
            desc = framework_pb2.ProgramDesc()
            desc.version.version = 0
            for b in self.blocks:
                b._to_desc(desc.blocks.add())
            self._desc_cache = (self._version, desc)
        return desc

    def serialize_to_string(self):
        return self.desc.SerializeToString()

    def sync_with_cpp(self):
        """Makes the program what its ``desc`` now says: changes made through the desc's
        methods (core.BlockDesc, OpDesc, VarDesc) since it was taken reach the program."""
        self._load(self.desc)

    _sync_with_cpp = sync_with_cpp

    @staticmethod
    def parse_from_string(binary_str):
        desc = framework_pb2.ProgramDesc()
        desc.ParseFromString(binary_str)
        return Program._from_desc(desc)

    @staticmethod
    def _from_desc(desc):
        p = Program()
        p._load(desc)
        return p

    def _load(self, desc):
        """Makes this program the ProgramDesc ``desc``, keeping the Variable objects (and
        Parameters) of every name a block keeps."""
        if len(desc.blocks) == 0:
            raise InvalidArgumentError("a ProgramDesc with no block", 1)
        while len(self.blocks) < len(desc.blocks):
            self.blocks.append(Block(self, len(self.blocks)))
        del self.blocks[len(desc.blocks):]
        for b, bd in zip(self.blocks, desc.blocks):
            b.parent_idx = bd.parent_idx
            b.forward_block_idx = bd.forward_block_idx if bd.HasField("forward_block_idx") else -1
            b._load(bd)
        for b in self.blocks:
            for op in b.ops:
                for name, value in op.attrs.items():
                    if isinstance(value, _BlockRef):
                        op.attrs[name] = self.blocks[value.idx]
                    elif isinstance(value, list) and value and isinstance(value[0], _BlockRef):
                        op.attrs[name] = [self.blocks[r.idx] for r in value]
        self.current_block_idx = 0
        self._bump()

    def to_string(self, throw_on_error=False, with_details=False):
        """The program as framework.proto text. With ``throw_on_error`` (as ``str`` has it), a
        tensor variable without a dtype raises ValueError: framework.proto requires one, and
        the text would show the fp32 the runtime assumes for it."""
        if throw_on_error:
            missing = ["%s (block %d)" % (v.name, b.idx) for b in self.blocks for v in b.vars.values() if v._untyped()]
            if missing:
                raise ValueError("the program is incomplete: variable%s %s ha%s no dtype" % (
                    "s" if len(missing) > 1 else "", ", ".join(missing), "ve" if len(missing) > 1 else "s"))
        return text_format.MessageToString(self.desc)

    def __str__(self):
        return self.to_string(True)

    __repr__ = __str__

    def to_graphviz(self, path=None, block=-1, highlights=None):
        """The program as a Graphviz graph (DOT text), as `rill graph` draws it: ops, variables,
        each sub-block a cluster under its op, channel sends joined to their receives, what
        the runtime's check finds marked. ``path`` also writes it: .dot as text, .svg/.png/.pdf
        rendered by Graphviz's dot. ``block`` >= 0 draws that block alone; ``highlights``
        names variables to outline."""
        if block >= self.num_blocks:
            raise ValueError("block %d: the program has blocks 0 to %d" % (block, self.num_blocks - 1))
        dot = _rill.program_to_dot(self.serialize_to_string(), block, list(highlights or []))
        if path is not None:
            _rill.write_graph(dot, str(path))
        return dot

    def global_block(self):
        return self.blocks[0]

    def block(self, index):
        return self.blocks[index]

    def current_block(self):
        return self.blocks[self.current_block_idx]

    @property
    def num_blocks(self):
        return len(self.blocks)

    def create_block(self, parent_idx=None):
        new_idx = len(self.blocks)
        parent = self.current_block_idx if parent_idx is None else parent_idx
        self.blocks.append(Block(self, new_idx, parent))
        self.current_block_idx = new_idx
        self._bump()
        return self.current_block()

    def rollback(self):
        self.current_block_idx = self.current_block().parent_idx

    _create_block = create_block  # Paddle 1.x's names
    _rollback = rollback

    def list_vars(self):
        for b in self.blocks:
            for v in b.vars.values():
                yield v

    def clone(self, for_test=False):
        """A copy of the program; with ``for_test``, ops that train differently (dropout,
        batch_norm) set to inference (``is_test``). Parameters stay Parameters."""
        p = Program.parse_from_string(self.serialize_to_string())
        p.random_seed = self.random_seed
        p._values_before_run = dict(self._values_before_run)
        for b, src in zip(p.blocks, self.blocks):
            for name, v in src.vars.items():
                c = b.vars[name]
                c._stop_gradient = v.stop_gradient
                c.is_data = v.is_data
        p._copy_param_info_from(self)
        if for_test:
            p._inference_optimize()
        return p

    def _inference_optimize(self):
        for b in self.blocks:
            for op in b.ops:
                if "is_test" in _schema_attrs(op.type):
                    op.attrs["is_test"] = True
        self._bump()
        return self

    inference_optimize = _inference_optimize

    def _prune_with_input(self, feeded_var_names, targets):
        """_prune, where the variables named feeded_var_names are fed: the ops that compute
        them are dropped too."""
        feeded = feeded_var_names if isinstance(feeded_var_names, (list, tuple)) else [feeded_var_names]
        for name in feeded:
            if not isinstance(name, str):
                raise ValueError("All feeded_var_names of Program._prune_with_input() can only be str, but "
                                 "received %s." % type(name).__name__)
        return self._prune(targets, set(feeded))

    def _prune(self, targets, feeded=()):
        """A copy of block 0 keeping only the ops ``targets`` (Variables, names or Operators)
        depend on, as Fluid's Program.prune; none for the variables in `feeded`."""
        names = set()
        for t in targets if isinstance(targets, (list, tuple)) else [targets]:
            if isinstance(t, Operator):
                names.update(t.output_arg_names)
            else:
                names.add(t.name if isinstance(t, Variable) else t)
        p = self.clone()
        block = p.global_block()
        keep = []
        names -= set(feeded)
        for op in reversed(block.ops):
            if set(op.output_arg_names) & names:
                keep.append(op)
                names.update(op.input_arg_names)
                names.update(_sub_block_inputs(p, op))
                names -= set(feeded)
        block.ops = list(reversed(keep))
        p._bump()
        return p

    prune = _prune


def _sub_block_inputs(program, op):
    names = set()
    for value in op.attrs.values():
        blocks = value if isinstance(value, list) else [value]
        for b in blocks:
            if isinstance(b, Block):
                for inner in b.ops:
                    names.update(inner.input_arg_names)
                    names.update(_sub_block_inputs(program, inner))
    return names


def registered_schema(op_type):
    """The op's schema; for a type no loaded plugin registers, ValueError in Fluid's words
    (as its OpProtoHolder raises it) followed by the runtime's, which names near types."""
    schema = _rill.op_schema(op_type)
    if schema is None:
        raise ValueError("Operator \"%s\" has not been registered. %s" % (op_type, _rill.unknown_op_message(op_type)))
    return schema


def _schema_attrs(op_type):
    schema = _rill.op_schema(op_type)
    return schema["attrs"] if schema else {}


# An op's proto as Fluid's OpProto message names its parts (OpProtoHolder).
OpProto = collections.namedtuple("OpProto", "type inputs outputs attrs comment")
OpProtoVar = collections.namedtuple("OpProtoVar", "name comment duplicable intermediate dispensable")
OpProtoAttr = collections.namedtuple("OpProtoAttr", "name type comment generated")


class OpProtoHolder(object):
    """Fluid's registry of op protos, read from the loaded plugins' schemas:
    ``OpProtoHolder.instance().get_op_proto(type)``."""

    _instance = None

    @classmethod
    def instance(cls):
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def get_op_proto(self, type):
        schema = registered_schema(type)

        def slots(specs):
            return [OpProtoVar(s["name"], "", s["duplicable"], False, s["optional"]) for s in specs]
        attrs = [OpProtoAttr(name, spec["type"], "", False) for name, spec in schema["attrs"].items()]
        attrs += [OpProtoAttr(name, kind, "", True) for name, (kind, _) in _FRAMEWORK_ATTRS.items()]
        return OpProto(type, slots(schema["inputs"]), slots(schema["outputs"]), attrs, schema["doc"] or "")

    def update_op_proto(self):
        """Nothing to do: each proto is read from the plugins loaded when it is asked for."""

    @staticmethod
    def generated_op_attr_names():
        return set(_FRAMEWORK_ATTRS)


_main_program_ = Program()
_startup_program_ = Program()


def default_startup_program():
    return _startup_program_


def default_main_program():
    return _main_program_


def switch_main_program(program):
    global _main_program_
    prev, _main_program_ = _main_program_, program
    return prev


def switch_startup_program(program):
    global _startup_program_
    prev, _startup_program_ = _startup_program_, program
    return prev


@contextlib.contextmanager
def program_guard(main_program, startup_program=None):
    if not isinstance(main_program, Program):
        raise TypeError("program_guard takes a Program")
    main_program = switch_main_program(main_program)
    if startup_program is not None:
        if not isinstance(startup_program, Program):
            raise TypeError("program_guard takes a Program as its startup program")
        startup_program = switch_startup_program(startup_program)
    try:
        yield
    finally:
        switch_main_program(main_program)
        if startup_program is not None:
            switch_startup_program(startup_program)


def get_var(name, program=None):
    program = default_main_program() if program is None else program
    return program.global_block().var(name)
