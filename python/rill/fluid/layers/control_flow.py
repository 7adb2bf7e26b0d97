"""fluid.layers.control_flow: While, ConditionalBlock, Switch, IfElse (a branch per row),
comparisons, increment, Print, and tensor arrays (create_array, array_write, array_read,
array_length: Fluid's LoDTensorArray, a variable holding a list of tensors, which a loop
fills step by step).

A block guard (``with while_op.block():``) opens a sub-block of the current block; on
leaving it, the op that runs the sub-block is appended to the parent block, with the
variables the sub-block reads from outside in its X (or Params) slot and the parent's
variables it writes in Out, in the order the sub-block first uses them.
"""
import contextlib

from rill.fluid import core
from rill.fluid.framework import Program, Variable, VarType, _dtype_name
from rill.fluid.layer_helper import LayerHelper

__all__ = ["While", "while_loop", "ConditionalBlock", "Switch", "IfElse", "BlockGuard", "increment", "less_than", "less_equal",
           "greater_than", "greater_equal", "equal", "not_equal", "logical_and", "logical_or", "logical_xor",
           "logical_not", "Print", "create_array", "array_write", "array_read", "array_length", "is_array",
           "tensor_array_to_tensor", "is_empty", "split_lod_tensor", "merge_lod_tensor"]


@contextlib.contextmanager
def in_parent_block(program):
    """Appends the layers made in the ``with`` to the parent of `program`'s current block
    (what an RNN's block puts before its loop)."""
    current = program.current_block_idx
    program.current_block_idx = program.current_block().parent_idx
    try:
        yield
    finally:
        program.current_block_idx = current


class BlockGuard(object):
    """Opens a sub-block of the current block of ``main_program`` for its ``with``."""

    def __init__(self, main_program):
        if not isinstance(main_program, Program):
            raise TypeError("BlockGuard takes a Program")
        self.main_program = main_program

    def __enter__(self):
        self.main_program.create_block()

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.main_program.rollback()
        return False


def block_reads_and_writes(block, already_written=()):
    """The names ``block``'s ops read before writing them, and those they write, each in
    first-use order."""
    written = list(already_written)
    written_set = set(written)
    reads, seen = [], set()
    for op in block.ops:
        for name in op.input_arg_names:
            if name not in written_set and name not in seen:
                seen.add(name)
                reads.append(name)
        for name in op.output_arg_names:
            if name not in written_set:
                written_set.add(name)
                written.append(name)
    return reads, written


class WhileGuard(BlockGuard):
    def __init__(self, while_op):
        super(WhileGuard, self).__init__(while_op.helper.main_program)
        self.while_op = while_op

    def __enter__(self):
        self.while_op.status = While.IN_WHILE_BLOCK
        return super(WhileGuard, self).__enter__()

    def __exit__(self, exc_type, exc_val, exc_tb):
        if exc_type is not None:
            return False
        self.while_op.status = While.AFTER_WHILE_BLOCK
        self.while_op._complete()
        return super(WhileGuard, self).__exit__(exc_type, exc_val, exc_tb)


class While(object):
    """``with While(cond).block():`` runs the block while ``cond`` (a bool [1]) is true."""
    BEFORE_WHILE_BLOCK, IN_WHILE_BLOCK, AFTER_WHILE_BLOCK = 0, 1, 2

    def __init__(self, cond, is_test=False, name=None):
        self.helper = LayerHelper("while", name=name)
        self.status = While.BEFORE_WHILE_BLOCK
        if not isinstance(cond, Variable):
            raise TypeError("While's condition must be a Variable")
        if cond.dtype != core.VarDesc.VarType.BOOL:
            raise TypeError("While's condition %s must be a bool tensor, is dtype %s" % (cond.name, cond.dtype))
        if list(cond.shape) not in ([1], []):
            raise TypeError("While's condition %s must have shape [1], has %s" % (cond.name, list(cond.shape)))
        self.cond_var = cond
        self.is_test = is_test

    def block(self):
        return WhileGuard(self)

    def _complete(self):
        main_program = self.helper.main_program
        while_block = main_program.current_block()
        parent_block = main_program.block(while_block.parent_idx)
        reads, written = block_reads_and_writes(while_block, [self.cond_var.name])
        x = [parent_block._find_var_recursive(n) for n in reads]
        out_vars = [parent_block.vars[n] for n in written if n in parent_block.vars]
        # No StepScopes: the backward pass gives the op one when it differentiates the loop,
        # so only a loop that needs its steps' values keeps them (core/ops/while_op.cc).
        parent_block.append_op(type="while",
                               inputs={"X": [v for v in x if v is not None], "Condition": [self.cond_var]},
                               outputs={"Out": out_vars},
                               attrs={"sub_block": while_block, "is_test": self.is_test})


class ConditionalBlockGuard(BlockGuard):
    def __init__(self, block):
        super(ConditionalBlockGuard, self).__init__(block.helper.main_program)
        self.block = block

    def __exit__(self, exc_type, exc_val, exc_tb):
        if exc_type is not None:
            return False
        self.block._complete()
        return super(ConditionalBlockGuard, self).__exit__(exc_type, exc_val, exc_tb)


class ConditionalBlock(object):
    """``with ConditionalBlock([cond], is_scalar_condition=True).block():`` runs the block
    once when the condition holds."""

    def __init__(self, inputs, is_scalar_condition=False, name=None):
        for each in inputs:
            if not isinstance(each, Variable):
                raise TypeError("ConditionalBlock takes Variables")
        self.inputs = inputs
        self.is_scalar_condition = is_scalar_condition
        self.helper = LayerHelper("conditional_block", name=name)

    def block(self):
        return ConditionalBlockGuard(self)

    def _complete(self):
        inside_block = self.helper.main_program.current_block()
        parent_block = self.helper.main_program.block(inside_block.parent_idx)
        reads, written = block_reads_and_writes(inside_block)
        input_names = set(v.name for v in self.inputs)
        params = [parent_block._find_var_recursive(n) for n in reads if n not in input_names]
        out_list = [parent_block.vars[n] for n in written if n in parent_block.vars]
        step_scope = parent_block.create_var(type=core.VarDesc.VarType.STEP_SCOPES)
        parent_block.append_op(type="conditional_block",
                               inputs={"X": self.inputs, "Params": [p for p in params if p is not None]},
                               outputs={"Out": out_list, "Scope": [step_scope]},
                               attrs={"sub_block": inside_block, "is_scalar_condition": self.is_scalar_condition})


class Switch(object):
    """``with Switch() as switch:`` then ``with switch.case(cond):`` blocks and an optional
    ``with switch.default():``: the first case whose condition (a bool [1]) holds runs, or
    the default when none does. Each case is a conditional_block on "this condition and
    none before it"."""

    def __init__(self, name=None):
        self.helper = LayerHelper("switch", name=name)
        self.inside_scope = False
        self.none_before = None  # a bool [1]: no case so far held

    def case(self, condition):
        if not self.inside_scope:
            raise ValueError("Switch.case is used inside `with Switch() as switch:`")
        if self.none_before is None:
            runs = condition
            self.none_before = logical_not(condition)
        else:
            runs = logical_and(self.none_before, condition)
            self.none_before = logical_and(self.none_before, logical_not(condition))
        return ConditionalBlockGuard(ConditionalBlock([runs], is_scalar_condition=True))

    def default(self):
        if self.none_before is None:
            raise ValueError("Switch.default needs a case before it")
        return ConditionalBlockGuard(ConditionalBlock([self.none_before], is_scalar_condition=True))

    def __enter__(self):
        self.inside_scope = True
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.inside_scope = False
        return False


def while_loop(cond, body, loop_vars, is_test=False, name=None):
    """Paddle 1.7+'s functional loop: while cond(*loop_vars), loop_vars = body(*loop_vars);
    returns the final loop_vars (a list). In static mode one While op whose block runs body
    and writes its results back into the loop variables (tensor arrays carried as they are);
    in dygraph mode a Python loop over the values."""
    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callable")
    if not isinstance(loop_vars, (list, tuple)) or not loop_vars:
        raise ValueError("while_loop: loop_vars must be a non-empty list or tuple")
    loop_vars = list(loop_vars)

    def outputs_of(values):
        values = list(values) if isinstance(values, (list, tuple)) else [values]
        if len(values) != len(loop_vars):
            raise ValueError("while_loop: body returned %d values for %d loop_vars" % (len(values), len(loop_vars)))
        return values

    def check(flag):
        if not isinstance(flag, Variable) or flag.dtype != core.VarDesc.VarType.BOOL or \
                list(flag.shape) not in ([1], []):
            raise TypeError("while_loop: cond must return a bool Variable of shape [1], got %r" % (flag,))
        return flag
    pre_cond = check(cond(*loop_vars))
    if pre_cond.block.program._eager is not None:
        while bool(pre_cond.numpy().reshape(-1)[0]):
            loop_vars = outputs_of(body(*loop_vars))
            pre_cond = check(cond(*loop_vars))
        return loop_vars
    from rill.fluid.layers.tensor import assign
    loop = While(pre_cond, is_test=is_test, name=name)
    with loop.block():
        outs = outputs_of(body(*loop_vars))
        now_cond = check(cond(*outs))
        for out, var in zip(outs, loop_vars):
            if out is var:
                continue
            if is_array(var):
                raise ValueError("while_loop: body must return the tensor array %s it was given (write into it)"
                                 % var.name)
            assign(out, var)
        assign(now_cond, pre_cond)
    return loop_vars


def split_lod_tensor(input, mask, level=0):
    """(out_true, out_false): input's rows (or its sequences at LoD level `level`) where the
    bool mask (one value each) is true, where it is false."""
    for name, value in (("input", input), ("mask", mask)):
        if not isinstance(value, Variable):
            raise TypeError("split_lod_tensor: %s must be a Variable, got %r" % (name, value))
    helper = LayerHelper("split_lod_tensor")
    out_true = helper.create_tmp_variable(dtype=input.dtype)
    out_false = helper.create_tmp_variable(dtype=input.dtype)
    for out in (out_true, out_false):
        if input._shape is not None:
            out._shape = [-1] + list(input.shape[1:])
        out._lod_level = input.lod_level
    helper.append_op(type="split_lod_tensor", inputs={"X": [input], "Mask": [mask]},
                     outputs={"OutTrue": [out_true], "OutFalse": [out_false]}, attrs={"level": level})
    return out_true, out_false


def merge_lod_tensor(in_true, in_false, x, mask, level=0):
    """in_true's and in_false's rows (or sequences) put back in the order of mask (x is the
    tensor split_lod_tensor split)."""
    for name, value in (("in_true", in_true), ("in_false", in_false), ("x", x), ("mask", mask)):
        if not isinstance(value, Variable):
            raise TypeError("merge_lod_tensor: %s must be a Variable, got %r" % (name, value))
    helper = LayerHelper("merge_lod_tensor")
    out = helper.create_tmp_variable(dtype=in_true.dtype)
    if in_true._shape is not None:
        out._shape = list(in_true.shape)
    out._lod_level = in_true.lod_level
    helper.append_op(type="merge_lod_tensor",
                     inputs={"X": [x], "Mask": [mask], "InTrue": [in_true], "InFalse": [in_false]},
                     outputs={"Out": [out]}, attrs={"level": level})
    return out


class IfElse(object):
    """``ie = IfElse(cond)`` over a bool [N, 1] with one value per row (or per sequence) of
    the inputs: ``with ie.true_block():`` and ``with ie.false_block():`` each run on the rows
    where cond is true, false (``ie.input(x)``), giving their results with ``ie.output``;
    ``ie()`` puts the two branches' outputs back in the rows' order. Each branch is a
    conditional_block over x's rows split by split_lod_tensor; merge_lod_tensor joins them."""
    OUT_IF_ELSE_BLOCKS, IN_IF_ELSE_TRUE_BLOCKS, IN_IF_ELSE_FALSE_BLOCKS = 0, 1, 2

    def __init__(self, cond, name=None):
        if not isinstance(cond, Variable):
            raise TypeError("IfElse's condition must be a Variable, got %r" % (cond,))
        self.helper = LayerHelper("ifelse", name=name)
        self.cond = cond
        self.input_table = {}
        self.status = IfElse.OUT_IF_ELSE_BLOCKS
        self.conditional_true_block = ConditionalBlock(inputs=[cond])
        self.conditional_false_block = ConditionalBlock(inputs=[cond])
        self.output_table = ([], [])  # (false outputs, true outputs)

    def input(self, x):
        """x's rows (or sequences) of the branch being written."""
        if self.status == IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError("IfElse.input is called inside true_block() or false_block()")
        if not isinstance(x, Variable):
            raise TypeError("IfElse.input takes a Variable, got %r" % (x,))
        if x.name not in self.input_table:
            with in_parent_block(self.helper.main_program):
                self.input_table[x.name] = split_lod_tensor(x, self.cond)
        out_true, out_false = self.input_table[x.name]
        return out_true if self.status == IfElse.IN_IF_ELSE_TRUE_BLOCKS else out_false

    def true_block(self):
        return _IfElseBlockGuard(True, self)

    def false_block(self):
        return _IfElseBlockGuard(False, self)

    def output(self, *outs):
        """The branch's results, one for each of the other branch's."""
        if self.status == IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError("IfElse.output is called inside true_block() or false_block()")
        table = self.output_table[1 if self.status == IfElse.IN_IF_ELSE_TRUE_BLOCKS else 0]
        for each in outs:
            with in_parent_block(self.helper.main_program):
                outside = LayerHelper("ifelse_output").create_tmp_variable(dtype=each.dtype)
                if each._shape is not None:
                    outside._shape = list(each.shape)
            table.append(outside)
            self.helper.append_op(type="assign", inputs={"X": [each]}, outputs={"Out": [outside]})

    def __call__(self):
        false_outs, true_outs = self.output_table
        if not false_outs and not true_outs:
            raise ValueError("IfElse: write true_block() and false_block() before calling it")
        if false_outs and true_outs and len(false_outs) != len(true_outs):
            raise ValueError("IfElse: the true block has %d outputs, the false block %d" %
                             (len(true_outs), len(false_outs)))
        if not false_outs or not true_outs:
            return false_outs or true_outs
        return [merge_lod_tensor(true_var, false_var, self.cond, self.cond)
                for false_var, true_var in zip(false_outs, true_outs)]


class _IfElseBlockGuard(object):
    def __init__(self, is_true, ifelse):
        if ifelse.status != IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError("an IfElse block cannot be opened inside another")
        self.is_true = is_true
        self.ifelse = ifelse
        block = ifelse.conditional_true_block if is_true else ifelse.conditional_false_block
        self.guard = block.block()

    def __enter__(self):
        self.ifelse.status = IfElse.IN_IF_ELSE_TRUE_BLOCKS if self.is_true else IfElse.IN_IF_ELSE_FALSE_BLOCKS
        self.guard.__enter__()

    def __exit__(self, exc_type, exc_val, exc_tb):
        if exc_type is not None:
            self.guard.__exit__(exc_type, exc_val, exc_tb)
            return False
        self.guard.__exit__(None, None, None)
        self.ifelse.status = IfElse.OUT_IF_ELSE_BLOCKS
        if not self.ifelse.output_table[1 if self.is_true else 0]:
            raise ValueError("IfElse: a block must give its outputs (IfElse.output)")
        return False


def is_array(var):
    """Whether `var` is a Variable declared as a tensor array."""
    return isinstance(var, Variable) and var.type == VarType.LOD_TENSOR_ARRAY


def create_array(dtype):
    """An empty tensor array of `dtype` entries."""
    helper = LayerHelper("array")
    return helper.create_variable(name="%s.out" % helper.name, type=VarType.LOD_TENSOR_ARRAY, dtype=dtype)


def _index_as_of_now(i):
    """A copy of index `i` taken here: the gradient ops of an array write or read run after
    the whole forward pass, when an `i` incremented in place since holds another value.
    (Fluid has increment's gradient decrement it back instead.)"""
    helper = LayerHelper("array_index")
    copy = helper.create_tmp_variable(dtype=i.dtype, stop_gradient=True)
    copy._shape = [1]
    helper.append_op(type="assign", inputs={"X": [i]}, outputs={"Out": [copy]})
    return copy


def array_write(x, i, array=None):
    """array[i] = x (a [1] int64 i); the array grows to hold entry i. A new array when none
    is given. Returns the array."""
    if not isinstance(x, Variable) or not isinstance(i, Variable):
        raise TypeError("array_write: x and i must be Variables")
    if array is None:
        array = create_array(x.dtype)
    elif not is_array(array):
        raise TypeError("array_write: array %s is not a tensor array" % array.name)
    if array._shape is None and x._shape is not None:
        array._shape = list(x.shape)  # an entry's shape, for the layers reading the array
    helper = LayerHelper("array_write")
    helper.append_op(type="write_to_array", inputs={"X": [x], "I": [_index_as_of_now(i)]}, outputs={"Out": [array]})
    return array


def array_read(array, i):
    """A copy of array[i] (a [1] int64 i)."""
    if not is_array(array):
        raise TypeError("array_read: %r is not a tensor array" % (array,))
    helper = LayerHelper("array_read")
    out = helper.create_tmp_variable(dtype=array.dtype)
    if array._shape is not None:
        out._shape = list(array.shape)  # an entry's, as array_write recorded it
    out._lod_level = array.lod_level
    helper.append_op(type="read_from_array", inputs={"X": [array], "I": [_index_as_of_now(i)]}, outputs={"Out": [out]})
    return out


def array_length(array):
    """The number of entries of the array: an int64 [1]."""
    if not is_array(array):
        raise TypeError("array_length: %r is not a tensor array" % (array,))
    helper = LayerHelper("array_length")
    out = helper.create_tmp_variable(dtype="int64", stop_gradient=True)
    out._shape = [1]
    helper.append_op(type="lod_array_length", inputs={"X": [array]}, outputs={"Out": [out]})
    return out


def tensor_array_to_tensor(input, axis=1, name=None, use_stack=False):
    """(the entries of the tensor array `input` joined along axis, or stacked there; an int32
    tensor of each entry's size along axis): also concat's and stack's form for an input."""
    if not is_array(input):
        raise TypeError("tensor_array_to_tensor: %r is not a tensor array" % (input,))
    helper = LayerHelper("tensor_array_to_tensor")
    out = helper.create_tmp_variable(dtype=input.dtype)
    index = helper.create_tmp_variable(dtype="int32", stop_gradient=True)
    if input._shape:  # an entry's shape, as array_write records it; the joined dim is unknown
        shape = list(input.shape)
        if use_stack:
            shape.insert(axis if axis >= 0 else axis + len(shape) + 1, -1)
        else:
            shape[axis] = -1
        out._shape = shape
    helper.append_op(type="tensor_array_to_tensor", inputs={"X": [input]}, outputs={"Out": [out], "OutIndex": [index]},
                     attrs={"axis": axis, "use_stack": use_stack})
    return out, index


def increment(x, value=1.0, in_place=True):
    helper = LayerHelper("increment", **locals())
    if in_place:
        out = x
    else:
        out = helper.create_tmp_variable(dtype=x.dtype)
        out._shape = list(x.shape)
    helper.append_op(type="increment", inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"step": float(value)})
    return out


def _compare(op_type, x, y, cond, force_cpu=None):
    helper = LayerHelper(op_type, x=x, y=y)
    # Fluid's contract for these layers' arguments (TypeError, as its check_type raises).
    for arg, var in (("x", x), ("y", y)):
        if var.dtype not in (VarType.BOOL, VarType.FP32, VarType.FP64, VarType.INT32, VarType.INT64):
            raise TypeError("The data type of '%s' in %s must be bool, float32, float64, int32 or int64, but "
                            "received %s" % (arg, op_type, _dtype_name(var.dtype)))
    if cond is not None and not isinstance(cond, Variable):
        raise TypeError("The type of 'cond' in %s must be Variable, but received %s" % (op_type, type(cond).__name__))
    if force_cpu is not None and not isinstance(force_cpu, bool):
        raise TypeError("The type of 'force_cpu' in %s must be bool, but received %s" %
                        (op_type, type(force_cpu).__name__))
    if cond is None:
        cond = helper.create_tmp_variable(dtype="bool")
        cond._shape = list(x.shape)
        cond.stop_gradient = True
    attrs = {} if force_cpu is None else {"force_cpu": force_cpu}
    helper.append_op(type=op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [cond]}, attrs=attrs)
    return cond


def less_than(x, y, force_cpu=None, cond=None, **ignored):
    return _compare("less_than", x, y, cond, force_cpu)


def less_equal(x, y, cond=None):
    return _compare("less_equal", x, y, cond)


def greater_than(x, y, cond=None):
    return _compare("greater_than", x, y, cond)


def greater_equal(x, y, cond=None):
    return _compare("greater_equal", x, y, cond)


def equal(x, y, cond=None, **ignored):
    return _compare("equal", x, y, cond)


def not_equal(x, y, cond=None):
    return _compare("not_equal", x, y, cond)


def _logical(op_type, x, y, out):
    helper = LayerHelper(op_type, x=x, y=y)
    if out is None:
        out = helper.create_tmp_variable(dtype="bool")
        out._shape = list(x.shape)
    inputs = {"X": [x]} if y is None else {"X": [x], "Y": [y]}
    helper.append_op(type=op_type, inputs=inputs, outputs={"Out": [out]})
    return out


def logical_and(x, y, out=None, name=None):
    return _logical("logical_and", x, y, out)


def logical_or(x, y, out=None, name=None):
    return _logical("logical_or", x, y, out)


def logical_xor(x, y, out=None, name=None):
    return _logical("logical_xor", x, y, out)


def logical_not(x, out=None, name=None):
    return _logical("logical_not", x, None, out)


def Print(input, first_n=-1, message=None, summarize=-1, print_tensor_name=True, print_tensor_type=True,
          print_tensor_shape=True, print_tensor_lod=True, print_phase="both"):
    """Prints ``input`` (name, dtype, shape, values) to standard output whenever the op
    runs; returns ``input``."""
    helper = LayerHelper("print", **locals())
    helper.append_op(type="print", inputs={"In": input},
                     attrs={"first_n": first_n, "summarize": summarize, "message": message or "",
                            "print_tensor_name": print_tensor_name, "print_tensor_type": print_tensor_type,
                            "print_tensor_shape": print_tensor_shape, "print_tensor_lod": print_tensor_lod,
                            "print_phase": print_phase})
    return input


def is_empty(x, cond=None, name=None):
    """Whether x holds no element: a bool [1] (into `cond` when given)."""
    if not isinstance(x, Variable):
        raise TypeError("is_empty: x must be a Variable, got %r" % (x,))
    helper = LayerHelper("is_empty", name=name)
    if cond is None:
        cond = helper.create_tmp_variable(dtype="bool", stop_gradient=True)
        cond._shape = [1]
    elif not isinstance(cond, Variable) or cond.dtype != core.VarDesc.VarType.BOOL:
        raise TypeError("is_empty: cond must be a bool Variable, got %r" % (cond,))
    helper.append_op(type="is_empty", inputs={"X": [x]}, outputs={"Out": [cond]})
    return cond


# Fluid keeps StaticRNN, DynamicRNN and its rank-table layers in this module; they live in
# static_rnn.py and dynamic_rnn.py, which build on the layers above (hence imported last).
from rill.fluid.layers.dynamic_rnn import DynamicRNN, lod_rank_table, max_sequence_len, lod_tensor_to_array, \
    array_to_lod_tensor, shrink_memory, reorder_lod_tensor_by_rank  # noqa: E402,F401
from rill.fluid.layers.static_rnn import StaticRNN  # noqa: E402,F401
