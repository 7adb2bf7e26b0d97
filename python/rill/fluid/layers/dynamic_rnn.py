"""fluid.layers DynamicRNN and the rank-table layers it is built of (Fluid 0.14's API).

A DynamicRNN runs its block once per time step over a batch of sequences of different
lengths: the sequences are ranked longest first (lod_rank_table), each step input is split
into one tensor-array entry per step holding the rows of the sequences still running
(lod_tensor_to_array), memories shrink to those rows (shrink_memory), and the outputs are
put back into sequences (array_to_lod_tensor). The block is a While loop; training takes
its gradient step by step (core/ops/while_op.cc).
"""
import contextlib

from rill.fluid.framework import Variable, VarType
from rill.fluid.layer_helper import LayerHelper
from rill.fluid.layers.control_flow import While, array_read, array_write, in_parent_block, increment, less_than
from rill.fluid.layers.tensor import fill_constant

__all__ = ["DynamicRNN", "lod_rank_table", "max_sequence_len", "lod_tensor_to_array", "array_to_lod_tensor",
           "shrink_memory", "reorder_lod_tensor_by_rank"]


def _check_variable(layer, name, value):
    if not isinstance(value, Variable):
        raise TypeError("%s: %s must be a Variable, got %r" % (layer, name, value))


def lod_rank_table(x, level=0):
    """The rank table of x's LoD level `level` (x a Variable, or a list of one): its sequences
    longest first."""
    if isinstance(x, (list, tuple)):
        if len(x) != 1:
            raise TypeError("lod_rank_table ranks one variable, got %d" % len(x))
        x = x[0]
    _check_variable("lod_rank_table", "x", x)
    if not isinstance(level, int):
        raise TypeError("lod_rank_table: level must be an int, got %r" % (level,))
    helper = LayerHelper("lod_rank_table")
    table = helper.create_variable(type=VarType.LOD_RANK_TABLE, name=helper.name + ".out")
    table.stop_gradient = True
    helper.append_op(type="lod_rank_table", inputs={"X": [x]}, outputs={"Out": [table]}, attrs={"level": level})
    return table


def max_sequence_len(rank_table):
    """The length of the rank table's longest sequence, an int64 [1]."""
    _check_rank_table("max_sequence_len", rank_table)
    helper = LayerHelper("max_sequence_len")
    out = helper.create_tmp_variable(dtype="int64", stop_gradient=True)
    out._shape = [1]
    helper.append_op(type="max_sequence_len", inputs={"RankTable": [rank_table]}, outputs={"Out": [out]})
    return out


def lod_tensor_to_array(x, table):
    """A tensor array of x's time steps, entry t holding row t of each sequence longer than t."""
    _check_variable("lod_tensor_to_array", "x", x)
    _check_variable("lod_tensor_to_array", "table", table)
    helper = LayerHelper("lod_tensor_to_array")
    array = helper.create_variable(name=helper.name + ".out", type=VarType.LOD_TENSOR_ARRAY, dtype=x.dtype)
    if x._shape is not None:
        array._shape = list(x.shape)  # an entry's shape, for the layers reading the array
    array._lod_level = max(x.lod_level - 1, 0)  # an entry's: a step's parts keep the levels below
    helper.append_op(type="lod_tensor_to_array", inputs={"X": [x], "RankTable": [table]},
                     outputs={"Out": [array]})
    return array


def array_to_lod_tensor(x, table):
    """The steps of tensor array x put back into sequences (lod_tensor_to_array's inverse)."""
    _check_variable("array_to_lod_tensor", "x", x)
    _check_variable("array_to_lod_tensor", "table", table)
    helper = LayerHelper("array_to_lod_tensor")
    out = helper.create_tmp_variable(dtype=x.dtype)
    if x._shape is not None:
        out._shape = list(x.shape)
    out._lod_level = x.lod_level + 1
    helper.append_op(type="array_to_lod_tensor", inputs={"X": [x], "RankTable": [table]}, outputs={"Out": [out]})
    return out


def shrink_memory(x, i, table):
    """x's first rows, one per sequence of the rank table longer than step i."""
    for name, value in (("x", x), ("i", i), ("table", table)):
        _check_variable("shrink_memory", name, value)
    helper = LayerHelper("shrink_memory")
    out = helper.create_tmp_variable(dtype=x.dtype)
    out._shape = None if x._shape is None else list(x.shape)
    helper.append_op(type="shrink_rnn_memory", inputs={"X": [x], "I": [i], "RankTable": [table]},
                     outputs={"Out": [out]})
    return out


def _check_rank_table(layer, table):
    _check_variable(layer, "rank_table", table)
    if table.type != VarType.LOD_RANK_TABLE:
        raise TypeError("%s: rank_table %s must be a rank table (lod_rank_table's output), is %s" %
                        (layer, table.name, table.type))


def reorder_lod_tensor_by_rank(x, rank_table):
    """x's sequences (or rows) in the rank table's order."""
    _check_variable("reorder_lod_tensor_by_rank", "x", x)
    _check_rank_table("reorder_lod_tensor_by_rank", rank_table)
    helper = LayerHelper("reorder_lod_tensor_by_rank")
    out = helper.create_tmp_variable(dtype=x.dtype)
    out._shape = None if x._shape is None else list(x.shape)
    helper.append_op(type="reorder_lod_tensor_by_rank", inputs={"X": [x], "RankTable": [rank_table]},
                     outputs={"Out": [out]})
    return out


class DynamicRNN(object):
    """``with rnn.block():`` defines one time step: ``rnn.step_input(seq)`` gives the step's
    rows of a sequence input, ``rnn.static_input(x)`` a per-sequence input, ``rnn.memory``
    a state carried to the next step (``rnn.update_memory(old, new)``), ``rnn.output``
    the step's outputs; ``rnn()`` then gives the outputs as sequences."""
    BEFORE_RNN, IN_RNN, AFTER_RNN = 0, 1, 2

    def __init__(self, name=None):
        self.helper = LayerHelper("dynamic_rnn", name=name)
        self.status = DynamicRNN.BEFORE_RNN
        self.lod_rank_table = None
        self.max_seq_len = None
        self.step_idx = None
        self.zero_idx = fill_constant(shape=[1], value=0, dtype="int64", force_cpu=True)
        self.mem_dict = {}
        self.output_array = []
        self.outputs = []
        self.cond = self.helper.create_tmp_variable(dtype="bool", stop_gradient=True)
        self.cond._shape = [1]
        self.while_op = While(self.cond)
        self.input_array = []
        self.mem_link = []

    def step_input(self, x):
        """The rows of sequence input x at this step (one per sequence still running)."""
        self._assert_in_rnn_block("step_input")
        _check_variable("DynamicRNN.step_input", "x", x)
        if self.lod_rank_table is None:
            with in_parent_block(self.helper.main_program):
                self.lod_rank_table = lod_rank_table(x)
                self.max_seq_len = max_sequence_len(self.lod_rank_table)
                less_than(x=self.step_idx, y=self.max_seq_len, cond=self.cond)
        with in_parent_block(self.helper.main_program):
            array = lod_tensor_to_array(x, self.lod_rank_table)
        self.input_array.append((array, x.dtype))
        return array_read(array=array, i=self.step_idx)

    def static_input(self, x):
        """x (one row or sequence per input sequence), reordered and shrunk to this step's."""
        self._assert_in_rnn_block("static_input")
        _check_variable("DynamicRNN.static_input", "x", x)
        if self.lod_rank_table is None:
            raise RuntimeError("DynamicRNN.static_input must be called after step_input")
        with in_parent_block(self.helper.main_program):
            reordered = reorder_lod_tensor_by_rank(x, self.lod_rank_table)
        return shrink_memory(reordered, self.step_idx, self.lod_rank_table)

    @contextlib.contextmanager
    def block(self):
        if self.status != DynamicRNN.BEFORE_RNN:
            raise ValueError("DynamicRNN.block() can be entered once")
        self.step_idx = fill_constant(shape=[1], dtype="int64", value=0, force_cpu=True)
        self.status = DynamicRNN.IN_RNN
        with self.while_op.block():
            yield
            if self.lod_rank_table is None:
                raise ValueError("a DynamicRNN block needs a step_input")
            increment(x=self.step_idx, value=1.0, in_place=True)
            for new_mem, mem_array in self.mem_link:
                array_write(x=new_mem, i=self.step_idx, array=mem_array)
            less_than(x=self.step_idx, y=self.max_seq_len, cond=self.cond)
        self.status = DynamicRNN.AFTER_RNN
        for array in self.output_array:
            self.outputs.append(array_to_lod_tensor(x=array, table=self.lod_rank_table))

    def __call__(self, *args, **kwargs):
        if self.status != DynamicRNN.AFTER_RNN:
            raise ValueError("a DynamicRNN's outputs are read after its block")
        return self.outputs[0] if len(self.outputs) == 1 else self.outputs

    def memory(self, init=None, shape=None, value=0.0, need_reorder=False, dtype="float32"):
        """A state carried from step to step: starting as `init` (one row per sequence;
        need_reorder when its rows follow the input's order), or as `value` of `shape`."""
        self._assert_in_rnn_block("memory")
        if init is None:
            if not self.input_array:
                raise ValueError("DynamicRNN.memory(shape=...) must come after step_input")
            if shape is None:
                raise ValueError("DynamicRNN.memory needs init or shape")
            array, _ = self.input_array[0]
            with in_parent_block(self.helper.main_program):
                first = array_read(array=array, i=self.zero_idx)
                init = self.helper.create_tmp_variable(dtype=dtype)
                init._shape = [-1] + list(shape)
                self.helper.append_op(type="fill_constant_batch_size_like", inputs={"Input": [first]},
                                      outputs={"Out": [init]},
                                      attrs={"shape": [-1] + list(shape), "value": float(value), "dtype": init.dtype})
            return self.memory(init=init)
        _check_variable("DynamicRNN.memory", "init", init)
        with in_parent_block(self.helper.main_program):
            if need_reorder:
                if self.lod_rank_table is None:
                    raise ValueError("DynamicRNN.memory(need_reorder=True) must come after step_input")
                init = reorder_lod_tensor_by_rank(init, self.lod_rank_table)
            mem_array = array_write(x=init, i=self.zero_idx)
        mem = shrink_memory(array_read(array=mem_array, i=self.step_idx), self.step_idx, self.lod_rank_table)
        self.mem_dict[mem.name] = mem_array
        return mem

    def update_memory(self, ex_mem, new_mem):
        """The memory ex_mem holds new_mem at the next step."""
        self._assert_in_rnn_block("update_memory")
        _check_variable("DynamicRNN.update_memory", "ex_mem", ex_mem)
        _check_variable("DynamicRNN.update_memory", "new_mem", new_mem)
        mem_array = self.mem_dict.get(ex_mem.name)
        if mem_array is None:
            raise ValueError("DynamicRNN.update_memory: %s is not a memory of this RNN" % ex_mem.name)
        self.mem_link.append((new_mem, mem_array))

    def output(self, *outputs):
        """Marks this step's values as outputs, one sequence each after the RNN."""
        self._assert_in_rnn_block("output")
        for each in outputs:
            with in_parent_block(self.helper.main_program):
                array = self.helper.create_variable(name="%s.output_array.%s" % (self.helper.name, each.name),
                                                    type=VarType.LOD_TENSOR_ARRAY, dtype=each.dtype)
            array_write(x=each, i=self.step_idx, array=array)
            self.output_array.append(array)

    def _assert_in_rnn_block(self, method):
        if self.status != DynamicRNN.IN_RNN:
            raise ValueError("DynamicRNN.%s can be called inside its block only" % method)
