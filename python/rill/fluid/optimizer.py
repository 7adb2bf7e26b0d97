"""fluid.optimizer: SGD, Momentum, Adagrad, DecayedAdagrad, RMSProp, Adam, Adamax and
Adadelta with Fluid's constructors.

``minimize(loss)`` appends the backward pass, each parameter's gradient clipping
(fluid.clip) and weight decay (fluid.regularizer), a global learning-rate variable (filled by
the startup program), each optimizer's accumulators (also filled there), and an update op
per trainable parameter, sorted by name as Fluid does; Adam and Adamax then scale their
beta powers.
"""
from collections import defaultdict

import numpy as np

from rill.fluid import core, unique_name
from rill.fluid.backward import append_backward
from rill.fluid.clip import BaseGradientClipAttr, clip_gradients
from rill.fluid.framework import Variable, default_main_program
from rill.fluid.initializer import Constant
from rill.fluid.layer_helper import LayerHelper
from rill.fluid.lr_scheduler import LRScheduler
from rill.fluid.regularizer import append_regularization_ops

__all__ = ["SGD", "Momentum", "Adagrad", "DecayedAdagrad", "RMSProp", "Adam", "Adamax", "Adadelta", "Ftrl",
           "SGDOptimizer", "MomentumOptimizer", "AdagradOptimizer", "DecayedAdagradOptimizer", "RMSPropOptimizer",
           "AdamOptimizer", "AdamaxOptimizer", "AdadeltaOptimizer", "FtrlOptimizer", "Optimizer"]


def _state_dtype(param):
    """The dtype of the one-element state an update of `param` reads (a beta power): the
    parameter's, fp32 for an fp16 one."""
    return "float32" if param.dtype in ("float16", core.VarDesc.VarType.FP16) else param.dtype


class Optimizer(object):
    def __init__(self, learning_rate, regularization=None, LARS_weight_decay=0.0, parameter_list=None,
                 grad_clip=None, flatten_param_grads=False, align_size=-1, name=None):
        """parameter_list (Fluid 1.7+): the parameters minimize updates when its own
        parameter_list is not given (all the program's trainable ones when neither is).
        grad_clip (Paddle 1.8+): a clip (fluid.clip's) for every gradient whose parameter's
        need_clip holds, instead of each parameter's own.
        flatten_param_grads and align_size (Paddle 2.1's): Paddle may copy the parameters and
        gradients into one buffer, a layout choice that changes no value; Rill updates each
        in place, so _flatten_param_grads stays False."""
        if not isinstance(learning_rate, (float, int, Variable, LRScheduler)):
            raise TypeError("learning_rate must be a float, a Variable or an LRScheduler, got %r" % (learning_rate,))
        if grad_clip is not None and not isinstance(grad_clip, BaseGradientClipAttr):
            raise TypeError("grad_clip should be an instance of GradientClipBase's derived class, got %r"
                            % (grad_clip,))
        self._grad_clip = grad_clip
        self._parameter_list = None if parameter_list is None else list(parameter_list)
        # Paddle's: the dtype the parameters given have (None when none are given).
        self._dtype = getattr(self._parameter_list[0], "dtype", None) if self._parameter_list else None
        self.regularization = regularization
        self._learning_rate = learning_rate
        self._learning_rate_map = {}
        if isinstance(learning_rate, Variable):
            self._learning_rate_map[default_main_program()] = learning_rate
        self._accumulators = defaultdict(dict)
        self._beta_pows = defaultdict(dict)
        self._global_accumulators = {}
        self._accumulators_holder = {}  # set_state_dict's values for accumulators not made yet
        self._flatten_param_grads = False
        self.helper = None

    def global_learning_rate(self, program=None):
        return self._learning_rate_map.get(default_main_program() if program is None else program)

    def _current_rate(self):
        """The rate now: the number given, or the scheduler's current one."""
        return self._learning_rate() if isinstance(self._learning_rate, LRScheduler) else float(self._learning_rate)

    def _create_global_learning_rate(self, dtype):
        """The learning rate variable, of the loss's dtype (an fp64 network's updates take an
        fp64 rate), made at the current rate. A scheduler's is set to its current rate before
        each run of the program in static mode, at each update in dynamic mode."""
        var = self.global_learning_rate()
        if var is None:
            from rill.fluid.layers import create_global_var
            self._learning_rate_map[default_main_program()] = create_global_var(
                name=unique_name.generate("learning_rate"), shape=[1], value=self._current_rate(),
                dtype=dtype, persistable=True)
        if not isinstance(self._learning_rate, LRScheduler):
            return
        program = default_main_program()
        if program._eager is None:
            program._values_before_run[self.global_learning_rate().name] = self._learning_rate
        elif var is not None:
            self._fill_rate(var, self._current_rate())

    @staticmethod
    def _fill_rate(var, value):
        """Sets the rate variable `var` to `value` by a fill_constant op, as Paddle's: in
        dynamic mode it runs now, in static mode each run of the program from here on."""
        var.block.program.global_block().append_op(
            type="fill_constant", outputs={"Out": [var]},
            attrs={"dtype": var.dtype, "shape": list(var.shape), "value": float(value)})

    def set_lr(self, value):
        """A new learning rate, for the updates from here on."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError("The type of 'learning_rate' in set_lr must be float, but received %s." %
                            type(value).__name__)
        if isinstance(self._learning_rate, LRScheduler):
            raise RuntimeError("set_lr: the learning rate is an LRScheduler's, which sets it; step the scheduler "
                               "instead")
        if isinstance(self._learning_rate, Variable):
            raise RuntimeError("set_lr: the learning rate is the variable %s, which the program sets"
                               % self._learning_rate.name)
        self._learning_rate = float(value)
        for var in self._learning_rate_map.values():
            self._fill_rate(var, value)

    def current_step_lr(self):
        """The current learning rate (a scheduler's current one)."""
        return self._current_rate()

    def _state_vars(self):
        """The variables the optimizer keeps: accumulators and beta powers, per parameter or
        shared."""
        per_param = [var for store in (self._accumulators, self._beta_pows)
                     for by_param in store.values() for var in by_param.values()]
        return per_param + list(self._global_accumulators.values())

    def get_opti_var_name_list(self):
        """The names of the variables the optimizer made: its accumulators and learning rates."""
        return [var.name for var in self._state_vars() + list(self._learning_rate_map.values())]

    def state_dict(self):
        """{name: value} of the optimizer's accumulators (dynamic mode), and "LR_Scheduler":
        the scheduler's state when the learning rate is a scheduler's."""
        state = {var.name: var.numpy() for var in self._state_vars() if var.block.program._eager is not None}
        if isinstance(self._learning_rate, LRScheduler):
            state["LR_Scheduler"] = self._learning_rate.state_dict()
        return state

    def set_state_dict(self, state_dict):
        """Sets the accumulators state_dict names to its values (and the scheduler's state),
        those not made yet when the first update makes them (dynamic mode), as Paddle's; a
        value of another shape or dtype than its accumulator's is refused, naming it."""
        if isinstance(self._learning_rate, LRScheduler) and "LR_Scheduler" in state_dict:
            self._learning_rate.set_state_dict(state_dict["LR_Scheduler"])
        self._accumulators_holder = {k: v for k, v in state_dict.items() if k != "LR_Scheduler"}
        for var in self._state_vars():
            self._take_held_state(var)

    def _take_held_state(self, var):
        """Sets dygraph variable `var` to its value in the state set_state_dict was given."""
        if var.name not in self._accumulators_holder or var.block.program._eager is None:
            return
        tensor = var.block.program._eager.scope.find_var(var.name).get_tensor()
        value, held = np.asarray(self._accumulators_holder[var.name]), np.array(tensor)
        if value.shape != held.shape or value.dtype != held.dtype:
            raise ValueError("set_state_dict: %s is %s %s here, the state gives %s %s" % (
                var.name, held.dtype, list(held.shape), value.dtype, list(value.shape)))
        tensor.set(value, core.CPUPlace())

    set_dict = set_state_dict

    def _create_param_lr(self, param_and_grad):
        param_lr = param_and_grad[0].optimize_attr["learning_rate"]
        if isinstance(param_lr, Variable):
            return param_lr
        if param_lr == 1.0:
            return self.global_learning_rate()
        # The global rate times the parameter's, as Fluid 0.14 builds it (its programs have
        # these two ops).
        from rill.fluid.layers import elementwise_mul, fill_constant
        rate = self.global_learning_rate()
        return elementwise_mul(rate, fill_constant([1], rate.dtype, float(param_lr)))

    def _add_accumulator(self, name, param, dtype=None, fill_value=0.0, shape=None, store=None):
        """A variable of `param`'s shape (or `shape`) filled with fill_value by the startup
        program, kept in _accumulators (or in `store`, a dict of the same form: the beta
        powers, which Fluid 0.14 did not count among the accumulators)."""
        store = self._accumulators if store is None else store
        if param.name in store[name]:
            if param.block.program._eager is not None:
                return store[name][param.name]  # dygraph: each step's minimize updates the same ones
            raise ValueError("accumulator %s of %s already exists" % (name, param.name))
        var = self.helper.create_global_variable(
            name=unique_name.generate(name), persistable=True, dtype=dtype or param.dtype, type=param.type,
            shape=list(param.shape) if shape is None else shape)
        self.helper.set_variable_initializer(var, initializer=Constant(value=float(fill_value)))
        store[name][param.name] = var
        self._take_held_state(var)
        return var

    def _get_accumulator(self, name, param):
        return self._accumulators[name][param.name]

    def _add_global_accumulator(self, name, dtype=None, fill_value=0.0, shape=None, type=None, device=None):
        """One variable for all the parameters (shape [1] unless given, fp32 unless `dtype`),
        filled with fill_value by the startup program; adding one twice is an error (in
        dynamic mode each step's minimize gets the one there is)."""
        if name in self._global_accumulators:
            if self.helper.main_program._eager is not None:
                return self._global_accumulators[name]
            raise ValueError("global accumulator %s already exists" % name)
        var = self.helper.create_global_variable(
            name=unique_name.generate(name), persistable=True, dtype=dtype or "float32",
            type=core.VarDesc.VarType.LOD_TENSOR if type is None else type, shape=[1] if shape is None else shape)
        self.helper.set_variable_initializer(var, initializer=Constant(value=float(fill_value)))
        self._global_accumulators[name] = var
        self._take_held_state(var)
        return var

    def _get_global_accumulator(self, name):
        if name not in self._global_accumulators:
            raise ValueError("global accumulator %s does not exist" % name)
        return self._global_accumulators[name]

    def _add_beta_pow(self, name, param, beta):
        """beta^t for `param`'s update: [1] of its dtype (fp32 for fp16), beta at first,
        scaled by beta each step."""
        return self._add_accumulator(name, param, dtype=_state_dtype(param), fill_value=beta, shape=[1],
                                     store=self._beta_pows)

    def _get_beta_pow(self, name, param):
        return self._beta_pows[name][param.name]

    def _create_accumulators(self, block, parameters):
        pass

    def _finish_update(self, block, parameters_and_grads):
        pass

    def _append_optimize_op(self, block, param_and_grad):
        raise NotImplementedError()

    def create_optimization_pass(self, parameters_and_grads, loss, startup_program=None):
        from rill.fluid.framework import default_startup_program, program_guard
        with program_guard(loss.block.program, startup_program or default_startup_program()):
            return self._optimization_pass(parameters_and_grads, loss, startup_program)

    def _optimization_pass(self, parameters_and_grads, loss, startup_program):
        global_block = loss.block.program.global_block()
        start = len(global_block.ops)
        self.helper = LayerHelper(self.__class__.__name__)
        self._create_accumulators(loss.block, [p[0] for p in parameters_and_grads])
        self._create_global_learning_rate(loss.dtype if loss.dtype is not None else "float32")
        program = loss.block.program
        for param_and_grad in parameters_and_grads:
            if param_and_grad[1] is not None and param_and_grad[0].trainable:
                with program.optimized_guard(param_and_grad):
                    self._append_optimize_op(loss.block, param_and_grad)
        with program.optimized_guard([]):
            self._finish_update(loss.block, parameters_and_grads)
        return global_block.ops[start:]

    def _clip_gradients(self, params_grads):
        """The pairs clipped by grad_clip, or by each parameter's own clip."""
        return clip_gradients(params_grads, self._grad_clip)

    # The op adding a weight decay to its gradient (regularizer.append_regularization_ops).
    _decay_add_op = "elementwise_add"

    def _append_regularization(self, params_grads):
        """Each gradient plus its parameter's weight decay (its own regularizer, or the
        optimizer's)."""
        return append_regularization_ops(params_grads, self.regularization, self._decay_add_op)

    def append_regularization_ops(self, parameters_and_grads, regularization=None):
        """Paddle's method form of regularizer.append_regularization_ops, with this
        optimizer's op adding each decay."""
        return append_regularization_ops(parameters_and_grads, regularization, self._decay_add_op)

    def backward(self, loss, startup_program=None, parameter_list=None, no_grad_set=None, callbacks=None):
        """[(param, grad)] of loss, sorted by parameter name: the backward pass appended to
        loss's program (of parameter_list's parameters, the optimizer's, or all trainable
        ones); in dygraph mode the gradients loss.backward() left."""
        parameter_list = self._parameter_list if parameter_list is None else parameter_list
        if loss.block.program._eager is not None:
            from rill.fluid.dygraph.base import computed_gradients
            params_grads = computed_gradients(loss.block, parameter_list)
        else:
            params_grads = append_backward(loss, parameter_list, no_grad_set, callbacks)
        return sorted(params_grads, key=lambda x: x[0].name)

    def apply_gradients(self, params_grads):
        """Clips and regularizes the gradients, then appends the updates to the current
        program (their initializers to the current startup program); returns the ops
        appended to the program."""
        params_grads = sorted(params_grads, key=lambda x: x[0].name)
        params_grads = self._append_regularization(self._clip_gradients(params_grads))
        if not params_grads:
            return []
        return self.create_optimization_pass(params_grads, params_grads[0][0])

    def apply_optimize(self, loss, startup_program, params_grads):
        """apply_gradients in loss's program and `startup_program` (the default when None)."""
        from rill.fluid.framework import default_startup_program, program_guard
        with program_guard(loss.block.program, startup_program or default_startup_program()):
            return self.apply_gradients(params_grads)

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        """backward, then apply_optimize: appends the backward pass and the updates to loss's
        program (and the learning rate's and accumulators' initializers to
        `startup_program`, the default one when None); returns (every op the updates
        appended, [(param, grad)] as the updates read them: clipped and regularized)."""
        from rill.fluid.framework import default_startup_program, program_guard
        with program_guard(loss.block.program, startup_program or default_startup_program()):
            params_grads = self.backward(loss, startup_program, parameter_list, no_grad_set)
            params_grads = self._append_regularization(self._clip_gradients(params_grads))
            optimize_ops = self.create_optimization_pass(params_grads, loss, startup_program)
        return optimize_ops, params_grads


class SGDOptimizer(Optimizer):
    def __init__(self, learning_rate, **kwargs):
        super(SGDOptimizer, self).__init__(learning_rate=learning_rate, **kwargs)
        self.type = "sgd"

    def _append_optimize_op(self, block, param_and_grad):
        return block.append_op(
            type=self.type,
            inputs={"Param": param_and_grad[0], "Grad": param_and_grad[1],
                    "LearningRate": self._create_param_lr(param_and_grad)},
            outputs={"ParamOut": param_and_grad[0]})


class MomentumOptimizer(Optimizer):
    _velocity_acc_str = "velocity"

    def __init__(self, learning_rate, momentum, use_nesterov=False, **kwargs):
        super(MomentumOptimizer, self).__init__(learning_rate=learning_rate, **kwargs)
        self.type = "momentum"
        self._momentum = momentum
        self._use_nesterov = bool(use_nesterov)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._velocity_acc_str, p)

    def _append_optimize_op(self, block, param_and_grad):
        velocity = self._get_accumulator(self._velocity_acc_str, param_and_grad[0])
        return block.append_op(
            type=self.type,
            inputs={"Param": param_and_grad[0], "Grad": param_and_grad[1], "Velocity": velocity,
                    "LearningRate": self._create_param_lr(param_and_grad)},
            outputs={"ParamOut": param_and_grad[0], "VelocityOut": velocity},
            attrs=self._update_attrs(param_and_grad[0]))

    def _update_attrs(self, param):
        """The momentum op's attributes for `param`'s update."""
        return {"mu": self._momentum, "use_nesterov": self._use_nesterov}


class AdamOptimizer(Optimizer):
    _moment1_acc_str = "moment1"
    _moment2_acc_str = "moment2"
    _beta1_pow_acc_str = "beta1_pow_acc"
    _beta2_pow_acc_str = "beta2_pow_acc"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, use_global_beta_pow=False,
                 **kwargs):
        """beta1 and beta2 are numbers or one-element fp32 Variables (the op's Beta1Tensor and
        Beta2Tensor; their powers then start from 0.9 and 0.999, as Paddle's).
        use_global_beta_pow (Paddle 2.1's): one pair of beta powers for all the parameters,
        scaled once a step, instead of a pair per parameter (the same values)."""
        super(AdamOptimizer, self).__init__(learning_rate=learning_rate, **kwargs)
        self.type = "adam"
        self._beta1 = beta1
        self._beta2 = beta2
        self._epsilon = epsilon
        self._use_global_beta_pow = bool(use_global_beta_pow)

    def _first_powers(self):
        """((accumulator name, its first value), ...) of the two beta powers."""
        return ((self._beta1_pow_acc_str, 0.9 if isinstance(self._beta1, Variable) else self._beta1),
                (self._beta2_pow_acc_str, 0.999 if isinstance(self._beta2, Variable) else self._beta2))

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._moment1_acc_str, p)
            self._add_accumulator(self._moment2_acc_str, p)
            if not self._use_global_beta_pow:
                for acc, first in self._first_powers():
                    self._add_beta_pow(acc, p, first)
        if self._use_global_beta_pow and parameters:
            for acc, first in self._first_powers():
                self._add_global_accumulator(acc, dtype=_state_dtype(parameters[0]), fill_value=first)

    def _beta_pow(self, acc, param):
        """`param`'s beta power `acc`: its own, or the one all share."""
        return self._get_global_accumulator(acc) if self._use_global_beta_pow else self._get_beta_pow(acc, param)

    def _append_optimize_op(self, block, param_and_grad):
        p = param_and_grad[0]
        moment1 = self._get_accumulator(self._moment1_acc_str, p)
        moment2 = self._get_accumulator(self._moment2_acc_str, p)
        inputs = {"Param": p, "Grad": param_and_grad[1], "LearningRate": self._create_param_lr(param_and_grad),
                  "Moment1": moment1, "Moment2": moment2,
                  "Beta1Pow": self._beta_pow(self._beta1_pow_acc_str, p),
                  "Beta2Pow": self._beta_pow(self._beta2_pow_acc_str, p)}
        attrs = {"epsilon": self._epsilon}
        if self._use_global_beta_pow:
            attrs["use_global_beta_pow"] = True
        for attr, slot, beta in (("beta1", "Beta1Tensor", self._beta1), ("beta2", "Beta2Tensor", self._beta2)):
            if isinstance(beta, Variable):
                inputs[slot] = beta
            else:
                attrs[attr] = beta
        return block.append_op(
            type=self.type,
            inputs=inputs,
            outputs={"ParamOut": p, "Moment1Out": moment1, "Moment2Out": moment2}, attrs=attrs)

    def _finish_update(self, block, parameters_and_grads):
        main_block = block.program.global_block()
        updated = [p for p, g in parameters_and_grads if g is not None and p.trainable]
        for p in updated[:1] if self._use_global_beta_pow else updated:
            for acc, beta in ((self._beta1_pow_acc_str, self._beta1), (self._beta2_pow_acc_str, self._beta2)):
                var = self._beta_pow(acc, p)
                if isinstance(beta, Variable):
                    main_block.append_op(type="elementwise_mul", inputs={"X": var, "Y": beta}, outputs={"Out": var},
                                         attrs={"axis": -1})
                else:
                    main_block.append_op(type="scale", inputs={"X": var}, outputs={"Out": var},
                                         attrs={"scale": float(beta)})


class _AccumulatingOptimizer(Optimizer):
    """An optimizer whose op reads Param, Grad, LearningRate (unless _uses_lr is False) and
    one accumulator per entry of _slots, each updated in place: name -> the op's input slot
    (its output slot that name + "Out"), or name -> (input slot, output slot)."""
    _slots = {}
    _uses_lr = True

    def _attrs(self):
        return {}

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            for name in self._slots:
                self._add_accumulator(name, p)

    def _append_optimize_op(self, block, param_and_grad):
        p = param_and_grad[0]
        inputs = {"Param": p, "Grad": param_and_grad[1]}
        if self._uses_lr:
            inputs["LearningRate"] = self._create_param_lr(param_and_grad)
        outputs = {"ParamOut": p}
        for name, slot in self._slots.items():
            in_slot, out_slot = slot if isinstance(slot, tuple) else (slot, slot + "Out")
            inputs[in_slot] = outputs[out_slot] = self._get_accumulator(name, p)
        inputs.update(self._extra_inputs(p))
        return block.append_op(type=self.type, inputs=inputs, outputs=outputs, attrs=self._attrs())

    def _extra_inputs(self, param):
        return {}


class AdagradOptimizer(_AccumulatingOptimizer):
    _moment_acc_str = "moment"  # Fluid's names of the accumulators
    _slots = {_moment_acc_str: "Moment"}

    def __init__(self, learning_rate, epsilon=1.0e-6, **kwargs):
        super(AdagradOptimizer, self).__init__(learning_rate=learning_rate, **kwargs)
        self.type = "adagrad"
        self._epsilon = epsilon

    def _attrs(self):
        return {"epsilon": self._epsilon}


class DecayedAdagradOptimizer(_AccumulatingOptimizer):
    _moment_acc_str = "moment"
    _slots = {_moment_acc_str: "Moment"}

    def __init__(self, learning_rate, decay=0.95, epsilon=1.0e-6, **kwargs):
        super(DecayedAdagradOptimizer, self).__init__(learning_rate=learning_rate, **kwargs)
        self.type = "decayed_adagrad"
        self._decay = decay
        self._epsilon = epsilon

    def _attrs(self):
        return {"decay": self._decay, "epsilon": self._epsilon}


class RMSPropOptimizer(_AccumulatingOptimizer):
    _slots = {"momentum": "Moment", "mean_square": "MeanSquare", "mean_grad": "MeanGrad"}

    def __init__(self, learning_rate, rho=0.95, epsilon=1.0e-6, momentum=0.0, centered=False, **kwargs):
        super(RMSPropOptimizer, self).__init__(learning_rate=learning_rate, **kwargs)
        self.type = "rmsprop"
        self._rho, self._epsilon, self._momentum, self._centered = rho, epsilon, momentum, bool(centered)

    def _attrs(self):
        return {"decay": self._rho, "epsilon": self._epsilon, "momentum": self._momentum, "centered": self._centered}


class AdamaxOptimizer(_AccumulatingOptimizer):
    _moment_acc_str = "moment"
    _inf_norm_acc_str = "inf_norm"
    _slots = {_moment_acc_str: "Moment", _inf_norm_acc_str: "InfNorm"}
    _beta1_pow_acc_str = "beta1_pow_acc"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, **kwargs):
        super(AdamaxOptimizer, self).__init__(learning_rate=learning_rate, **kwargs)
        self.type = "adamax"
        self._beta1, self._beta2, self._epsilon = beta1, beta2, epsilon

    def _create_accumulators(self, block, parameters):
        super(AdamaxOptimizer, self)._create_accumulators(block, parameters)
        for p in parameters:
            self._add_beta_pow(self._beta1_pow_acc_str, p, self._beta1)

    def _extra_inputs(self, param):
        return {"Beta1Pow": self._get_beta_pow(self._beta1_pow_acc_str, param)}

    def _attrs(self):
        return {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon}

    def _finish_update(self, block, parameters_and_grads):
        main_block = block.program.global_block()
        for p, g in parameters_and_grads:
            if g is None or not p.trainable:
                continue
            var = self._get_beta_pow(self._beta1_pow_acc_str, p)
            main_block.append_op(type="scale", inputs={"X": var}, outputs={"Out": var},
                                 attrs={"scale": float(self._beta1)})


class AdadeltaOptimizer(_AccumulatingOptimizer):
    """As in Fluid, the update is not scaled by learning_rate: Adadelta sets its own step."""
    _slots = {"_avg_squared_grad": "AvgSquaredGrad", "_avg_squared_update": "AvgSquaredUpdate"}
    _uses_lr = False

    def __init__(self, learning_rate, epsilon=1.0e-6, rho=0.95, **kwargs):
        super(AdadeltaOptimizer, self).__init__(learning_rate=learning_rate, **kwargs)
        self.type = "adadelta"
        self._epsilon, self._rho = epsilon, rho

    def _attrs(self):
        return {"epsilon": self._epsilon, "rho": self._rho}


class FtrlOptimizer(_AccumulatingOptimizer):
    """FTRL-proximal (McMahan et al.), as Fluid's: l1 and l2 regularization, the learning
    rate's power lr_power."""
    _squared_acc_str = "squared"
    _linear_acc_str = "linear"
    _slots = {_squared_acc_str: ("SquaredAccumulator", "SquaredAccumOut"),
              _linear_acc_str: ("LinearAccumulator", "LinearAccumOut")}

    def __init__(self, learning_rate, l1=0.0, l2=0.0, lr_power=-0.5, **kwargs):
        super(FtrlOptimizer, self).__init__(learning_rate=learning_rate, **kwargs)
        if learning_rate is None:
            raise ValueError("learning_rate is not set.")
        self.type = "ftrl"
        self._l1, self._l2, self._lr_power = l1, l2, lr_power

    def _attrs(self):
        return {"l1": float(self._l1), "l2": float(self._l2), "lr_power": float(self._lr_power)}


SGD = SGDOptimizer
Momentum = MomentumOptimizer
Adagrad = AdagradOptimizer
DecayedAdagrad = DecayedAdagradOptimizer
RMSProp = RMSPropOptimizer
Adam = AdamOptimizer
Adamax = AdamaxOptimizer
Adadelta = AdadeltaOptimizer
Ftrl = FtrlOptimizer
