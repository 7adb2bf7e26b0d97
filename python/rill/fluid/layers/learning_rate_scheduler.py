"""fluid.layers' learning-rate schedules: a rate computed in the program, step by step, from a
global step counter (Fluid's @LR_DECAY_COUNTER@, incremented at the start of every run of
the main program), so that an optimizer given the result decays its rate as it trains.

Each returns a [1] float32 Variable: exponential_decay, natural_exp_decay,
inverse_time_decay, polynomial_decay, piecewise_decay and noam_decay, as Fluid defines them
(step counts from 0, or from 1 for noam_decay).
"""
from rill.fluid import unique_name
from rill.fluid.framework import default_main_program
from rill.fluid.initializer import Constant
from rill.fluid.layer_helper import LayerHelper

__all__ = ["autoincreased_step_counter", "exponential_decay", "natural_exp_decay", "inverse_time_decay",
           "polynomial_decay", "piecewise_decay", "noam_decay"]

_DECAY_COUNTER = "@LR_DECAY_COUNTER@"


def autoincreased_step_counter(counter_name=None, begin=1, step=1):
    """An int64 [1] persistable counter that holds `begin` in the first run of the main
    program and grows by `step` each run after (its increment is the program's first op)."""
    helper = LayerHelper("global_step_counter")
    name = counter_name or unique_name.generate("@STEP_COUNTER@")
    block = default_main_program().global_block()
    if name in block.vars:
        return block.vars[name]
    counter = helper.create_global_variable(name=name, dtype="int64", shape=[1], persistable=True)
    helper.set_variable_initializer(counter, initializer=Constant(value=float(begin - 1), force_cpu=True))
    block.prepend_op(type="increment", inputs={"X": [counter]}, outputs={"Out": [counter]},
                     attrs={"step": float(step)})
    counter.stop_gradient = True
    return counter


def _step(begin=0):
    from rill.fluid.layers.tensor import cast
    return cast(autoincreased_step_counter(counter_name=_DECAY_COUNTER, begin=begin, step=1), "float32")


def _constant(value):
    from rill.fluid.layers.tensor import fill_constant
    return fill_constant([1], "float32", float(value))


def _steps_over(decay_steps, staircase):
    """step / decay_steps, floored when staircase."""
    from rill.fluid.layers.ops import floor
    ratio = _step() / float(decay_steps)
    return floor(ratio) if staircase else ratio


def exponential_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """learning_rate * decay_rate ^ (step / decay_steps)."""
    from rill.fluid.layers.nn import elementwise_pow
    return elementwise_pow(_constant(decay_rate), _steps_over(decay_steps, staircase)) * float(learning_rate)


def natural_exp_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """learning_rate * exp(-decay_rate * step / decay_steps)."""
    from rill.fluid.layers.ops import exp
    return exp(_steps_over(decay_steps, staircase) * float(-decay_rate)) * float(learning_rate)


def inverse_time_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """learning_rate / (1 + decay_rate * step / decay_steps)."""
    return float(learning_rate) / (_steps_over(decay_steps, staircase) * float(decay_rate) + 1.0)


def polynomial_decay(learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False):
    """(learning_rate - end) * (1 - step / decay_steps) ^ power + end, step held at
    decay_steps; with cycle, decay_steps grows to the next multiple of itself past step."""
    from rill.fluid.layers.nn import elementwise_max, elementwise_min, elementwise_pow
    from rill.fluid.layers.ops import ceil
    step = _step()
    if cycle:
        steps = elementwise_max(ceil(step / float(decay_steps)), _constant(1.0)) * float(decay_steps)
    else:
        step = elementwise_min(step, _constant(decay_steps))
        steps = _constant(decay_steps)
    remaining = 1.0 - step / steps
    return elementwise_pow(remaining, _constant(power)) * float(learning_rate - end_learning_rate) + \
        float(end_learning_rate)


def piecewise_decay(boundaries, values):
    """values[i] while boundaries[i - 1] <= step < boundaries[i] (values[0] before the first
    boundary, the last value after the last)."""
    from rill.fluid.layers.control_flow import greater_equal, less_than
    from rill.fluid.layers.tensor import cast, sums
    if len(values) != len(boundaries) + 1:
        raise ValueError("piecewise_decay: %d values for %d boundaries (one more is needed)"
                         % (len(values), len(boundaries)))
    step = _step()
    terms = []
    for i, value in enumerate(values):
        # 1 inside piece i, else 0: each step picks one value exactly.
        inside = None
        if i > 0:
            inside = cast(greater_equal(step, _constant(boundaries[i - 1])), "float32")
        if i < len(boundaries):
            below = cast(less_than(step, _constant(boundaries[i])), "float32")
            inside = below if inside is None else inside * below
        terms.append(inside * float(value))
    return sums(terms) if len(terms) > 1 else terms[0]


def noam_decay(d_model, warmup_steps):
    """d_model^-0.5 * min(step^-0.5, warmup_steps^-1.5 * step), step from 1 (the
    Transformer's schedule)."""
    from rill.fluid.layers.nn import elementwise_min, elementwise_pow
    step = _step(begin=1)
    a = elementwise_pow(step, _constant(-0.5))
    b = step * float(warmup_steps ** -1.5)
    return elementwise_min(a, b) * float(d_model ** -0.5)
