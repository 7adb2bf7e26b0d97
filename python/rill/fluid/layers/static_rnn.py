"""fluid.layers.StaticRNN (Fluid 0.14's API): a recurrence over the first dimension of inputs
of a length fixed when the program is built ([T, batch, ...]).

Rill builds it of the pieces DynamicRNN uses, not of Fluid's `recurrent` op: each step
input's T slices go into a tensor array before the loop, a While loop runs the block once
per step (reading step t's slice and each memory's entry t, writing the outputs' entry t and
the memories' entry t + 1), and the outputs' arrays are stacked into [T, ...] after it. So
training takes its gradient step by step through while_grad, as DynamicRNN's does.
"""
import contextlib

from rill.fluid.framework import Variable, VarType
from rill.fluid.layer_helper import LayerHelper
from rill.fluid.layers.control_flow import While, array_read, array_write, in_parent_block, increment, less_than, \
    tensor_array_to_tensor
from rill.fluid.layers.tensor import fill_constant

__all__ = ["StaticRNN"]


class StaticRNN(object):
    """``with rnn.step():`` defines one step: ``rnn.step_input(x)`` gives x's slice at this
    step (x [T, ...]), ``rnn.memory(init=...)`` (or ``shape=`` and ``batch_ref=``) a state
    carried to the next step (``rnn.update_memory(old, new)``), ``rnn.step_output(o)`` (or
    ``rnn.output(...)``) a value kept per step; ``rnn()`` then gives each output stacked,
    [T, ...]."""
    BEFORE_RNN_BLOCK, IN_RNN_BLOCK, AFTER_RNN_BLOCK = 0, 1, 2

    def __init__(self, name=None):
        self.helper = LayerHelper("static_rnn", name=name)
        self.status = StaticRNN.BEFORE_RNN_BLOCK
        self.seq_len = None
        self.step_idx = None
        self.zero_idx = None
        self.cond = None
        self.while_op = None
        self.outer_of_input = {}  # a step input's name -> the whole sequence it is a step of
        self.memories = []  # [memory variable, its array, its update (None until given)]
        self.output_arrays = []
        self.outputs = []

    @contextlib.contextmanager
    def step(self):
        if self.status != StaticRNN.BEFORE_RNN_BLOCK:
            raise ValueError("StaticRNN.step() can be entered once")
        self.step_idx = fill_constant(shape=[1], dtype="int64", value=0, force_cpu=True)
        self.zero_idx = fill_constant(shape=[1], dtype="int64", value=0, force_cpu=True)
        self.cond = self.helper.create_tmp_variable(dtype="bool", stop_gradient=True)
        self.cond._shape = [1]
        self.while_op = While(self.cond)
        self.status = StaticRNN.IN_RNN_BLOCK
        with self.while_op.block():
            yield
            self._complete_step()
        self.status = StaticRNN.AFTER_RNN_BLOCK
        for array in self.output_arrays:
            self.outputs.append(tensor_array_to_tensor(array, axis=0, use_stack=True)[0])

    def _complete_step(self):
        if self.seq_len is None:
            raise ValueError("a StaticRNN block needs a step_input")
        for mem, _, update in self.memories:
            if update is None:
                raise ValueError("StaticRNN memory %s is never given its next value (update_memory)" % mem.name)
        with in_parent_block(self.helper.main_program):
            limit = fill_constant(shape=[1], dtype="int64", value=self.seq_len, force_cpu=True)
            less_than(x=self.step_idx, y=limit, cond=self.cond)
        increment(x=self.step_idx, value=1.0, in_place=True)
        for _, mem_array, update in self.memories:
            array_write(x=update, i=self.step_idx, array=mem_array)
        less_than(x=self.step_idx, y=limit, cond=self.cond)

    def step_input(self, x):
        """x's slice at this step: x is [T, ...] with T known now, the same for every input."""
        self._assert_in_rnn_block("step_input")
        if not isinstance(x, Variable):
            raise TypeError("StaticRNN.step_input takes a Variable, got %r" % (x,))
        if x._shape is None or len(x.shape) < 1 or x.shape[0] is None or x.shape[0] < 0:
            raise ValueError("StaticRNN.step_input: %s needs a known first dimension (the steps), has shape %s" %
                             (x.name, None if x._shape is None else list(x.shape)))
        if self.seq_len is None:
            self.seq_len = x.shape[0]
        elif self.seq_len != x.shape[0]:
            raise ValueError("StaticRNN.step_input: %s has %d steps, an earlier input %d" %
                             (x.name, x.shape[0], self.seq_len))
        with in_parent_block(self.helper.main_program):
            helper = LayerHelper("static_rnn_input")
            array = None
            for t in range(self.seq_len):
                piece = helper.create_tmp_variable(dtype=x.dtype)
                piece._shape = [1] + list(x.shape[1:])
                helper.append_op(type="slice", inputs={"Input": [x]}, outputs={"Out": [piece]},
                                 attrs={"axes": [0], "starts": [t], "ends": [t + 1], "decrease_axis": [0]})
                piece._shape = list(x.shape[1:])
                array = array_write(piece, fill_constant(shape=[1], dtype="int64", value=t, force_cpu=True),
                                    array=array)
        step = array_read(array, self.step_idx)
        self.outer_of_input[step.name] = x
        return step

    def memory(self, init=None, shape=None, batch_ref=None, init_value=0.0, init_batch_dim_idx=0,
               ref_batch_dim_idx=1):
        """A state carried from step to step, starting as `init`, or as `init_value` of
        `shape` with batch_ref's batch size (its dimension ref_batch_dim_idx; a step input
        counts as the whole sequence it is a step of, as in Fluid)."""
        self._assert_in_rnn_block("memory")
        if init is None:
            if shape is None or batch_ref is None:
                raise ValueError("StaticRNN.memory needs init, or shape and batch_ref")
            ref = self.outer_of_input.get(batch_ref.name, batch_ref)
            with in_parent_block(self.helper.main_program):
                helper = LayerHelper("static_rnn_memory")
                init = helper.create_tmp_variable(dtype=ref.dtype)
                init._shape = list(shape)
                helper.append_op(type="fill_constant_batch_size_like", inputs={"Input": [ref]},
                                 outputs={"Out": [init]},
                                 attrs={"shape": list(shape), "value": float(init_value), "dtype": ref.dtype,
                                        "input_dim_idx": ref_batch_dim_idx, "output_dim_idx": init_batch_dim_idx})
        elif not isinstance(init, Variable):
            raise TypeError("StaticRNN.memory: init must be a Variable, got %r" % (init,))
        with in_parent_block(self.helper.main_program):
            mem_array = array_write(init, self.zero_idx)
        mem = array_read(mem_array, self.step_idx)
        self.memories.append([mem, mem_array, None])
        return mem

    def update_memory(self, mem, var):
        """The memory `mem` holds `var` at the next step."""
        if not isinstance(mem, Variable) or not isinstance(var, Variable):
            raise TypeError("StaticRNN.update_memory takes Variables")
        for entry in self.memories:
            if entry[0].name == mem.name:
                entry[2] = var
                return
        raise ValueError("StaticRNN.update_memory: %s is not a memory of this RNN" % mem.name)

    def step_output(self, o):
        """Keeps o at every step: rnn() gives them stacked, [T, ...]."""
        self._assert_in_rnn_block("step_output")
        if not isinstance(o, Variable):
            raise TypeError("StaticRNN.step_output takes a Variable, got %r" % (o,))
        with in_parent_block(self.helper.main_program):
            array = self.helper.create_variable(name="%s.output_array.%s" % (self.helper.name, o.name),
                                                type=VarType.LOD_TENSOR_ARRAY, dtype=o.dtype)
        array_write(o, self.step_idx, array=array)
        self.output_arrays.append(array)

    def output(self, *outputs):
        for each in outputs:
            self.step_output(each)

    def __call__(self, *args, **kwargs):
        if self.status != StaticRNN.AFTER_RNN_BLOCK:
            raise ValueError("a StaticRNN's outputs are read after its block")
        if not self.outputs:
            raise ValueError("the StaticRNN has no output")
        return self.outputs[0] if len(self.outputs) == 1 else self.outputs

    def _assert_in_rnn_block(self, method):
        if self.status != StaticRNN.IN_RNN_BLOCK:
            raise ValueError("StaticRNN.%s can be called inside its block only" % method)
