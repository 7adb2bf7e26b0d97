"""paddle.optimizer's optimizers: Fluid's (rill.fluid.optimizer) under Paddle 2.x's
arguments: `learning_rate` (a number or an lr.LRScheduler), `parameters` (Fluid's
parameter_list), `weight_decay` (a float is an L2Decay of that coefficient, or a
regularizer), `grad_clip` (for the parameters whose need_clip holds, instead of their own
clips), and in dynamic mode
step() and clear_grad() around loss.backward(). multi_precision (fp16 master weights)
changes nothing: parameters here are fp32 or fp64.

Parameter groups: `parameters` may be a list of dicts, each {"params": [...]} with any of
"learning_rate" (a factor on the optimizer's rate, 1.0 when left out: Paddle 2.2's meaning;
2.1 took the optimizer's own rate as the default factor), "weight_decay" (replacing the
optimizer's and the parameters' own for that group), "grad_clip", and the optimizer's own
options its _group_options names (Adam's betas, Momentum's momentum, ...)."""
import contextlib

from rill.fluid import framework
from rill.fluid import optimizer as fluid_optimizer
from rill.fluid.contrib import optimizer as contrib_optimizer
from rill.fluid.clip import BaseGradientClipAttr, clip_gradients
from rill.fluid.lr_scheduler import LRScheduler
from rill.paddle.regularizer import L2Decay

__all__ = ["SGD", "Momentum", "Adam", "Adamax", "RMSProp", "Adadelta"]


def _required(value, name, low=None, below=None):
    """value, unless it is None or a number outside [low, below): a ValueError then."""
    if value is None:
        raise ValueError("%s is not set" % name)
    if isinstance(value, (int, float)) and (low is not None and value < low or below is not None and value >= below):
        raise ValueError("Invalid value of %s, expect %s in [%s, %s)." % (name, name, low, below or "inf"))
    return value


def _decay(weight_decay):
    """A weight_decay argument as a regularizer: a number is an L2Decay of that coefficient."""
    return L2Decay(weight_decay) if isinstance(weight_decay, (int, float)) else weight_decay


def _parameter_groups(parameters):
    """`parameters` as a list of group dicts, each with its "params" a list; None when it is
    a plain list of parameters. A group without params, params given as a set (no order) or
    a parameter in two groups is an error."""
    parameters = None if parameters is None else list(parameters)
    if not parameters or not isinstance(parameters[0], dict):
        return None
    groups, seen = [], set()
    for group in parameters:
        if not isinstance(group, dict) or "params" not in group:
            raise ValueError("parameter groups: each is a dict with 'params', got %r" % (group,))
        params = group["params"]
        if isinstance(params, set):
            raise TypeError("optimizer parameters should be in ordered collections, but received set, please use "
                            "list instead.")
        params = [params] if isinstance(params, framework.Variable) else list(params)
        for p in params:
            if p.name in seen:
                raise ValueError("some parameters appear in more than one parameter group: %s" % p.name)
            seen.add(p.name)
        groups.append(dict(group, params=params))
    return groups


class _Paddle2(object):
    """What Paddle 2.x's optimizers add to Fluid's; mixed in before the Fluid class."""

    _decay_add_op = "sum"  # Paddle 2.x's op adding a weight decay to its gradient

    # The optimizer's own options a parameter group may set: name -> the [low, below)
    # bounds _required checks (None: unbounded); each is the attribute "_" + name.
    _group_options = {}

    def __init__(self, learning_rate, parameters, weight_decay, grad_clip=None, **fluid_arguments):
        _required(learning_rate, "learning_rate")
        if not isinstance(learning_rate, LRScheduler) and (isinstance(learning_rate, bool) or
                                                           not isinstance(learning_rate, (int, float))):
            raise TypeError("learning rate should be float or an LRScheduler, got %s here" %
                            type(learning_rate).__name__)
        groups = _parameter_groups(parameters)
        if groups is not None:
            parameters = [p for group in groups for p in group["params"]]
        super(_Paddle2, self).__init__(learning_rate=learning_rate, regularization=_decay(weight_decay),
                                       parameter_list=parameters, grad_clip=grad_clip, **fluid_arguments)
        self._options_by_param = {}  # parameter name -> {option: value} its group sets
        self._group_clips = []  # ({parameter name}, the group's grad_clip or None) of each group
        for group in groups or []:
            self._take_group(group)

    def _take_group(self, group):
        """Gives each of the group's parameters its rate factor, weight decay, clip and options."""
        options = {}
        for key, value in group.items():
            if key == "params":
                continue
            if key in ("learning_rate", "weight_decay", "grad_clip"):
                if key == "learning_rate" and (isinstance(value, bool) or not isinstance(value, (int, float))):
                    raise TypeError("a parameter group's learning_rate is a factor on the optimizer's rate, a "
                                    "number; got %r" % (value,))
                continue
            if key not in self._group_options:
                raise ValueError("%s: a parameter group may set params, learning_rate, weight_decay, grad_clip%s; "
                                 "not %r" % (type(self).__name__, "".join(", " + k for k in self._group_options), key))
            options["_" + key] = _required(value, key, *self._group_options[key])
        for param in group["params"]:
            param.optimize_attr["learning_rate"] = group.get("learning_rate", 1.0)
            if "weight_decay" in group:
                param.regularizer = _decay(group["weight_decay"])
            self._options_by_param[param.name] = options
        clip = group.get("grad_clip", self._grad_clip)
        if clip is not None and not isinstance(clip, BaseGradientClipAttr):
            raise TypeError("a parameter group's grad_clip should be a ClipGradBy*, got %r" % (clip,))
        self._group_clips.append((set(p.name for p in group["params"]), clip))

    def _clip_gradients(self, params_grads):
        """With parameter groups, each group's gradients clipped by its grad_clip (the
        optimizer's unless the group gives one; a global norm over the group's), as Paddle's
        step() clips them."""
        if not self._group_clips:
            return super(_Paddle2, self)._clip_gradients(params_grads)
        clipped = []
        for names, clip in self._group_clips:
            clipped += clip_gradients([(p, g) for p, g in params_grads if p.name in names], clip)
        grouped = set().union(*(names for names, _ in self._group_clips))
        clipped += super(_Paddle2, self)._clip_gradients([(p, g) for p, g in params_grads if p.name not in grouped])
        return sorted(clipped, key=lambda pair: pair[0].name)

    @contextlib.contextmanager
    def _options_of(self, param):
        """The optimizer's options set to those of `param`'s group while the block runs."""
        options = self._options_by_param.get(param.name, {})
        kept = {name: getattr(self, name) for name in options}
        for name, value in options.items():
            setattr(self, name, value)
        try:
            yield
        finally:
            for name, value in kept.items():
                setattr(self, name, value)

    # Each parameter's accumulators, update op and finishing ops are made under its group's
    # options; without groups, all at once, as the Fluid class makes them.
    def _create_accumulators(self, block, parameters):
        if not self._options_by_param:
            return super(_Paddle2, self)._create_accumulators(block, parameters)
        for param in parameters:
            with self._options_of(param):
                super(_Paddle2, self)._create_accumulators(block, [param])

    def _append_optimize_op(self, block, param_and_grad):
        with self._options_of(param_and_grad[0]):
            return super(_Paddle2, self)._append_optimize_op(block, param_and_grad)

    def _finish_update(self, block, parameters_and_grads):
        if not self._options_by_param:
            return super(_Paddle2, self)._finish_update(block, parameters_and_grads)
        for pair in parameters_and_grads:
            with self._options_of(pair[0]):
                super(_Paddle2, self)._finish_update(block, [pair])

    def _create_param_lr(self, param_and_grad):
        """A parameter's own rate factor scales the global rate in one scale op, as Paddle 2.x
        builds it (Fluid 0.14's two ops: optimizer.py)."""
        param_lr = param_and_grad[0].optimize_attr["learning_rate"]
        if isinstance(param_lr, (int, float)) and param_lr != 1.0:
            from rill.fluid.layers import scale
            return scale(self.global_learning_rate(), scale=float(param_lr))
        return super(_Paddle2, self)._create_param_lr(param_and_grad)

    def step(self):
        """Updates the parameters with the gradients loss.backward() left (dynamic mode)."""
        from rill.fluid.dygraph.base import computed_gradients
        if not self._parameter_list:
            raise ValueError("step() updates the parameters the optimizer was given: pass parameters=")
        first = self._parameter_list[0]
        if first.block.program._eager is None:
            raise RuntimeError("step() works in dynamic mode only; in static mode call minimize(loss)")
        params_grads = computed_gradients(first.block, self._parameter_list)
        params_grads = self._append_regularization(self._clip_gradients(params_grads))
        self.create_optimization_pass(params_grads, first)

    def clear_grad(self):
        """Zeroes the gradients of the parameters (dynamic mode)."""
        for p in self._parameter_list or []:
            if p.block.program._eager is not None:
                p.clear_gradient()

    clear_gradients = clear_grad

    def get_lr(self):
        """The current learning rate (a scheduler's current one)."""
        return self._current_rate()


class SGD(_Paddle2, fluid_optimizer.SGDOptimizer):
    def __init__(self, learning_rate=0.001, parameters=None, weight_decay=None, grad_clip=None, name=None):
        _Paddle2.__init__(self, learning_rate, parameters, weight_decay, grad_clip)


class Momentum(_Paddle2, contrib_optimizer.Momentum):
    """An L2 weight decay (weight_decay, or a parameter's own L2Decay) is done by the
    momentum op itself (its regularization_method), not by ops before it, as Paddle 2.x's
    (fluid.contrib.optimizer.Momentum's)."""

    _group_options = {"momentum": (None, None), "use_nesterov": (None, None)}

    def __init__(self, learning_rate=0.001, momentum=0.9, parameters=None, use_nesterov=False, weight_decay=None,
                 grad_clip=None, multi_precision=False, rescale_grad=1.0, name=None):
        _Paddle2.__init__(self, learning_rate, parameters, weight_decay, grad_clip,
                          momentum=_required(momentum, "momentum"), use_nesterov=use_nesterov,
                          rescale_grad=rescale_grad)


class Adam(_Paddle2, fluid_optimizer.AdamOptimizer):
    _group_options = {"beta1": (0, 1), "beta2": (0, 1), "epsilon": (0, None)}

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08, parameters=None,
                 weight_decay=None, grad_clip=None, lazy_mode=False, multi_precision=False, name=None):
        if lazy_mode:
            raise NotImplementedError("Adam: lazy_mode is not supported (sparse gradients update every row)")
        _Paddle2.__init__(self, learning_rate, parameters, weight_decay, grad_clip,
                          beta1=_required(beta1, "beta1", 0, 1), beta2=_required(beta2, "beta2", 0, 1),
                          epsilon=_required(epsilon, "epsilon", 0))


class Adamax(_Paddle2, fluid_optimizer.AdamaxOptimizer):
    _group_options = {"beta1": (0, 1), "beta2": (0, 1), "epsilon": (0, None)}

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08, parameters=None,
                 weight_decay=None, grad_clip=None, name=None):
        _Paddle2.__init__(self, learning_rate, parameters, weight_decay, grad_clip,
                          beta1=_required(beta1, "beta1", 0, 1), beta2=_required(beta2, "beta2", 0, 1),
                          epsilon=_required(epsilon, "epsilon", 0))


class RMSProp(_Paddle2, fluid_optimizer.RMSPropOptimizer):
    _group_options = {"rho": (0, None), "epsilon": (0, None), "momentum": (0, None), "centered": (None, None)}

    def __init__(self, learning_rate, rho=0.95, epsilon=1e-06, momentum=0.0, centered=False, parameters=None,
                 weight_decay=None, grad_clip=None, name=None):
        _Paddle2.__init__(self, learning_rate, parameters, weight_decay, grad_clip, rho=_required(rho, "rho", 0),
                          epsilon=_required(epsilon, "epsilon", 0), momentum=_required(momentum, "momentum", 0),
                          centered=centered)


class Adadelta(_Paddle2, fluid_optimizer.AdadeltaOptimizer):
    _group_options = {"epsilon": (None, None), "rho": (None, None)}

    def __init__(self, learning_rate=0.001, epsilon=1.0e-6, rho=0.95, parameters=None, weight_decay=None,
                 grad_clip=None, name=None):
        _Paddle2.__init__(self, learning_rate, parameters, weight_decay, grad_clip,
                          epsilon=_required(epsilon, "epsilon"), rho=_required(rho, "rho"))
