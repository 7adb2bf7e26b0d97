"""fluid.layers.StaticRNN (Fluid 0.14's API): a recurrence over the first dimension of its
inputs ([T, batch, ...]), every input of the same T.

It builds Fluid's program: the step block is the sub-block of a `recurrent` op, which runs it
once per step (core/ops/recurrent_op.cc); a step input is the variable of the input's own
name inside the block, a memory is an ex-state paired with the state `rnn_memory_helper`
copies its update into, and each step output is copied by `rnn_memory_helper` into a variable
of its own that the op stacks into [T, ...] outside. The backward pass differentiates it
through recurrent_grad, so a program this builds and one Paddle saved run the same way.
"""
import contextlib

from rill.fluid import core, unique_name
from rill.fluid.framework import Variable
from rill.fluid.layer_helper import LayerHelper
from rill.fluid.layers.control_flow import BlockGuard, block_reads_and_writes

__all__ = ["StaticRNN"]


class StaticRNN(object):
    """``with rnn.step():`` defines one step: ``rnn.step_input(x)`` gives x's slice at this
    step (x [T, ...]), ``rnn.memory(init=...)`` (or ``shape=`` and ``batch_ref=``) a state
    carried to the next step (``rnn.update_memory(old, new)``), ``rnn.step_output(o)`` (or
    ``rnn.output(...)``) a value kept per step; ``rnn()`` then gives each output stacked,
    [T, ...]."""
    BEFORE_RNN_BLOCK, IN_RNN_BLOCK, AFTER_RNN_BLOCK = 0, 1, 2

    def __init__(self, name=None, main_program=None):
        self.helper = LayerHelper("static_rnn", name=name, main_program=main_program)
        self.status = StaticRNN.BEFORE_RNN_BLOCK
        self.seq_len = None
        self.inputs = []  # the step inputs, variables of the step block
        self.memories = []  # [ex-state variable, its initial value, its update (None until given)]
        self.outputs = []  # the stacked outputs, variables of the parent block

    @contextlib.contextmanager
    def step(self):
        if self.status != StaticRNN.BEFORE_RNN_BLOCK:
            raise ValueError("StaticRNN.step() can be entered once")
        self.status = StaticRNN.IN_RNN_BLOCK
        with BlockGuard(self.helper.main_program):
            yield
            self._complete_op()
        self.status = StaticRNN.AFTER_RNN_BLOCK

    def _parent_block(self):
        program = self.helper.main_program
        return program.block(program.current_block().parent_idx)

    def _complete_op(self):
        if self.seq_len is None:
            raise ValueError("a StaticRNN block needs a step_input")
        rnn_block = self.helper.main_program.current_block()
        parent_block = self._parent_block()
        initial_states, ex_states, states = [], [], []
        for ex_state, init, update in self.memories:
            if update is None:
                raise ValueError("StaticRNN memory %s is never given its next value (update_memory)" % ex_state.name)
            state = self.helper.create_tmp_variable(dtype=update.dtype)
            self.helper.append_op(type="rnn_memory_helper", inputs={"X": [update]}, outputs={"Out": [state]},
                                  attrs={"dtype": update.dtype})
            initial_states.append(init)
            ex_states.append(ex_state.name)
            states.append(state.name)
        # What the block reads from outside: everything it reads but neither writes nor is given.
        given = [v.name for v in self.inputs] + ex_states
        reads, _ = block_reads_and_writes(rnn_block, given)
        parameters = [parent_block._find_var_recursive(n) for n in reads]
        step_scopes = parent_block.create_var(type=core.VarDesc.VarType.STEP_SCOPES)
        parent_block.append_op(type="recurrent",
                               inputs={"inputs": [parent_block._find_var_recursive(v.name) for v in self.inputs],
                                       "initial_states": initial_states,
                                       "parameters": [p for p in parameters if p is not None]},
                               outputs={"outputs": self.outputs, "step_scopes": [step_scopes]},
                               attrs={"has_states": bool(states), "ex_states": ex_states, "states": states,
                                      "sub_block": rnn_block})

    def step_input(self, x):
        """x's slice at this step: x is [T, ...], T the same for every input (-1: known when run)."""
        self._assert_in_rnn_block("step_input")
        if not isinstance(x, Variable):
            raise TypeError("StaticRNN.step_input takes a Variable, got %r" % (x,))
        if x._shape is None or len(x.shape) < 1:
            raise ValueError("StaticRNN.step_input: %s needs a first dimension (the steps), has shape %s" %
                             (x.name, None if x._shape is None else list(x.shape)))
        steps = x.shape[0] if x.shape[0] is not None and x.shape[0] >= 0 else -1
        if self.seq_len is None or self.seq_len == -1:
            self.seq_len = steps
        elif steps != -1 and self.seq_len != steps:
            raise ValueError("StaticRNN.step_input: %s has %d steps, an earlier input %d" % (x.name, steps, self.seq_len))
        step = self.helper.create_variable(name=x.name, dtype=x.dtype, shape=list(x.shape[1:]))
        self.inputs.append(step)
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
            # A step input stands for the whole sequence here: the variable of its name outside.
            ref = self._parent_block()._find_var_recursive(batch_ref.name) or batch_ref
            init = self._parent_block().create_var(name=unique_name.generate("@".join([self.helper.name, "memory_boot"])),
                                                   shape=list(shape), dtype=ref.dtype, persistable=False)
            self._parent_block().append_op(type="fill_constant_batch_size_like", inputs={"Input": [ref]},
                                           outputs={"Out": [init]},
                                           attrs={"shape": list(shape), "value": float(init_value), "dtype": ref.dtype,
                                                  "input_dim_idx": ref_batch_dim_idx,
                                                  "output_dim_idx": init_batch_dim_idx})
        elif not isinstance(init, Variable):
            raise TypeError("StaticRNN.memory: init must be a Variable, got %r" % (init,))
        ex_state = self.helper.create_variable(name=unique_name.generate("@".join([self.helper.name, "mem"])),
                                               dtype=init.dtype, shape=init.shape)
        self.memories.append([ex_state, init, None])
        return ex_state

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
        out = self.helper.create_tmp_variable(dtype=o.dtype)
        self.helper.append_op(type="rnn_memory_helper", inputs={"X": [o]}, outputs={"Out": [out]},
                              attrs={"dtype": o.dtype})
        shape = None if o._shape is None else [self.seq_len] + list(o.shape)
        self.outputs.append(self._parent_block().create_var(name=out.name, shape=shape, dtype=o.dtype))

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
