"""Learning-rate schedules: Paddle 2.x's LRScheduler family (paddle.optimizer.lr); fluid's
optimizers take them too, as Paddle 2.1's do.

A scheduler is a learning rate that changes by epoch (or step: whatever the caller counts).
Calling it gives the current rate; step() advances the count and computes the rate for it.
An optimizer given a scheduler as its learning_rate reads it before each update: in static
mode before each Executor.run of the program it optimizes, in dynamic mode at each step().

Invariant: `last_lr` is the rate for epoch `last_epoch`. The constructor steps once, so a
new scheduler (last_epoch=-1) stands at epoch 0 with its initial rate.
"""
import math
import numbers

import numpy as np

__all__ = ["LRScheduler", "NoamDecay", "PiecewiseDecay", "NaturalExpDecay", "InverseTimeDecay", "PolynomialDecay",
           "LinearWarmup", "ExponentialDecay", "MultiStepDecay", "StepDecay", "LambdaDecay", "ReduceOnPlateau",
           "CosineAnnealingDecay"]


def _number(value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("The type of %s must be float, but received %s" % (what, type(value).__name__))
    return float(value)


class LRScheduler(object):
    """The base: subclasses define get_lr(), the rate at self.last_epoch (they may read
    self.last_lr, the previous epoch's). A subclass whose rate has a closed form in the epoch
    defines _closed_form_lr(), which step(epoch) uses when jumping to an epoch."""

    def __init__(self, learning_rate=0.1, last_epoch=-1, verbose=False):
        self.base_lr = _number(learning_rate, "learning rate")
        self.last_lr = self.base_lr
        self.last_epoch = last_epoch
        self.verbose = verbose
        self.step()

    def __call__(self):
        return self.last_lr

    def step(self, epoch=None):
        """Advances to the next epoch, or to `epoch` when given."""
        if epoch is None:
            self.last_epoch += 1
            self.last_lr = self.get_lr()
        else:
            self.last_epoch = epoch
            closed_form = getattr(self, "_closed_form_lr", None)
            self.last_lr = closed_form() if closed_form is not None else self.get_lr()
        if self.verbose:
            print("Epoch %d: %s set learning rate to %s." % (self.last_epoch, type(self).__name__, self.last_lr))

    def get_lr(self):
        raise NotImplementedError("%s does not define get_lr()" % type(self).__name__)

    def state_keys(self):
        """The attributes state_dict() saves."""
        return ["last_epoch", "last_lr"]

    def state_dict(self):
        state = {}
        for key in self.state_keys():
            if key not in self.__dict__:
                continue
            value = self.__dict__[key]
            if isinstance(value, np.ndarray):  # a metric ReduceOnPlateau kept: one value
                value = value.reshape(-1)[0]
            state[key] = value
        return state

    def set_state_dict(self, state_dict):
        for key in self.state_keys():
            if key not in state_dict:
                raise RuntimeError("the state dict has no %r, which %s keeps: is it another scheduler's?" %
                                   (key, type(self).__name__))
            self.__dict__[key] = state_dict[key]

    set_dict = set_state_dict


class NoamDecay(LRScheduler):
    """The Transformer's: lr * d_model^-0.5 * min(epoch^-0.5, warmup_steps^-1.5 * epoch)."""

    def __init__(self, d_model, warmup_steps, learning_rate=1.0, last_epoch=-1, verbose=False):
        self.d_model = d_model
        self.warmup_steps = warmup_steps
        super(NoamDecay, self).__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        decay = 1.0 if self.last_epoch == 0 else self.last_epoch ** -0.5
        warmup = self.warmup_steps ** -1.5 * self.last_epoch
        return self.base_lr * self.d_model ** -0.5 * min(decay, warmup)


class PiecewiseDecay(LRScheduler):
    """values[i] while the epoch is below boundaries[i]; the last value after them all."""

    def __init__(self, boundaries, values, last_epoch=-1, verbose=False):
        if len(values) != len(boundaries) + 1:
            raise ValueError("PiecewiseDecay takes one value more than boundaries: %d boundaries, %d values" %
                             (len(boundaries), len(values)))
        self.boundaries = list(boundaries)
        self.values = list(values)
        super(PiecewiseDecay, self).__init__(last_epoch=last_epoch, verbose=verbose)

    def get_lr(self):
        for boundary, value in zip(self.boundaries, self.values):
            if self.last_epoch < boundary:
                return value
        return self.values[-1]


class NaturalExpDecay(LRScheduler):
    """lr * e^(-gamma * epoch)."""

    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        self.gamma = gamma
        super(NaturalExpDecay, self).__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * math.exp(-self.gamma * self.last_epoch)


class InverseTimeDecay(LRScheduler):
    """lr / (1 + gamma * epoch)."""

    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        self.gamma = gamma
        super(InverseTimeDecay, self).__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr / (1 + self.gamma * self.last_epoch)


class PolynomialDecay(LRScheduler):
    """(lr - end_lr) * (1 - epoch / decay_steps)^power + end_lr, end_lr after decay_steps;
    with cycle, decay_steps grows to the next multiple of itself past the epoch instead."""

    def __init__(self, learning_rate, decay_steps, end_lr=0.0001, power=1.0, cycle=False, last_epoch=-1,
                 verbose=False):
        if decay_steps <= 0:
            raise ValueError("PolynomialDecay: decay_steps must be positive, got %r" % (decay_steps,))
        self.decay_steps = decay_steps
        self.end_lr = end_lr
        self.power = power
        self.cycle = cycle
        super(PolynomialDecay, self).__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        epoch, steps = self.last_epoch, self.decay_steps
        if self.cycle:
            steps *= max(1, math.ceil(float(epoch) / steps))
        else:
            epoch = min(epoch, steps)
        return (self.base_lr - self.end_lr) * (1 - float(epoch) / steps) ** self.power + self.end_lr


class LinearWarmup(LRScheduler):
    """start_lr rising linearly to end_lr over warmup_steps, then learning_rate (a number, or
    a scheduler counted from the warmup's end)."""

    def __init__(self, learning_rate, warmup_steps, start_lr, end_lr, last_epoch=-1, verbose=False):
        if isinstance(learning_rate, bool) or not isinstance(learning_rate, (numbers.Real, LRScheduler)):
            raise TypeError("LinearWarmup: learning_rate must be a float, an int or an LRScheduler, got %s" %
                            type(learning_rate).__name__)
        if end_lr <= start_lr:
            raise ValueError("LinearWarmup: end_lr %s must be greater than start_lr %s" % (end_lr, start_lr))
        self.learning_rate = learning_rate
        self.warmup_steps = warmup_steps
        self.start_lr = start_lr
        self.end_lr = end_lr
        super(LinearWarmup, self).__init__(start_lr, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch < self.warmup_steps:
            return (self.end_lr - self.start_lr) * float(self.last_epoch) / self.warmup_steps + self.start_lr
        if isinstance(self.learning_rate, LRScheduler):
            self.learning_rate.step(self.last_epoch - self.warmup_steps)
            return self.learning_rate()
        return float(self.learning_rate)

    def state_dict(self):
        state = super(LinearWarmup, self).state_dict()
        if isinstance(self.learning_rate, LRScheduler):
            state["LinearWarmup_LR"] = self.learning_rate.state_dict()
        return state

    def set_state_dict(self, state_dict):
        super(LinearWarmup, self).set_state_dict(state_dict)
        if isinstance(self.learning_rate, LRScheduler):
            self.learning_rate.set_state_dict(state_dict["LinearWarmup_LR"])

    set_dict = set_state_dict


class ExponentialDecay(LRScheduler):
    """lr * gamma^epoch."""

    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        self.gamma = gamma
        super(ExponentialDecay, self).__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.gamma ** self.last_epoch


def _decay_factor(gamma, scheduler):
    if gamma >= 1.0:
        raise ValueError("%s: gamma should be < 1.0, got %r" % (scheduler, gamma))
    return gamma


class MultiStepDecay(LRScheduler):
    """lr * gamma^(the number of milestones the epoch has reached)."""

    def __init__(self, learning_rate, milestones, gamma=0.1, last_epoch=-1, verbose=False):
        if not isinstance(milestones, (tuple, list)):
            raise TypeError("The type of 'milestones' in 'MultiStepDecay' must be 'tuple, list', but received %s." %
                            type(milestones).__name__)
        if any(a >= b for a, b in zip(milestones, milestones[1:])):
            raise ValueError("MultiStepDecay: the milestones must increase, got %r" % (list(milestones),))
        self.milestones = list(milestones)
        self.gamma = _decay_factor(gamma, "MultiStepDecay")
        super(MultiStepDecay, self).__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        reached = sum(1 for m in self.milestones if self.last_epoch >= m)
        return self.base_lr * self.gamma ** reached


class StepDecay(LRScheduler):
    """lr * gamma^(epoch // step_size)."""

    def __init__(self, learning_rate, step_size, gamma=0.1, last_epoch=-1, verbose=False):
        if isinstance(step_size, bool) or not isinstance(step_size, int):
            raise TypeError("The type of 'step_size' must be 'int', but received %s." % type(step_size).__name__)
        self.step_size = step_size
        self.gamma = _decay_factor(gamma, "StepDecay")
        super(StepDecay, self).__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.gamma ** (self.last_epoch // self.step_size)


class LambdaDecay(LRScheduler):
    """lr * lr_lambda(epoch)."""

    def __init__(self, learning_rate, lr_lambda, last_epoch=-1, verbose=False):
        if not callable(lr_lambda):
            raise TypeError("The type of 'lr_lambda' in 'LambdaDecay' must be 'function', but received %s." %
                            type(lr_lambda).__name__)
        self.lr_lambda = lr_lambda
        super(LambdaDecay, self).__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.lr_lambda(self.last_epoch)


class ReduceOnPlateau(LRScheduler):
    """The rate times `factor` (not below min_lr) once a metric has not improved for more
    than `patience` steps; then `cooldown` steps pass before counting again. step(metric)
    takes the metric (a number, or an array or tensor of one value)."""

    def __init__(self, learning_rate, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
                 cooldown=0, min_lr=0, epsilon=1e-8, verbose=False):
        self.mode = mode.lower()
        if self.mode not in ("min", "max"):
            raise ValueError("ReduceOnPlateau: mode %r is unknown (min or max)" % mode)
        if factor >= 1.0:
            raise ValueError("ReduceOnPlateau: the new rate is the old times factor, and factor should be < 1.0")
        self.threshold_mode = threshold_mode.lower()
        if self.threshold_mode not in ("rel", "abs"):
            raise ValueError("ReduceOnPlateau: threshold mode %r is unknown (rel or abs)" % threshold_mode)
        self.factor = factor
        self.patience = patience
        self.threshold = threshold
        self.cooldown = cooldown
        self.min_lr = min_lr
        self.epsilon = epsilon
        self.cooldown_counter = 0
        self.best = None
        self.num_bad_epochs = 0
        self.base_lr = self.last_lr = _number(learning_rate, "'learning_rate' in 'ReduceOnPlateau'")
        self.last_epoch = 0
        self.verbose = verbose

    def state_keys(self):
        return ["cooldown_counter", "best", "num_bad_epochs", "last_epoch", "last_lr"]

    def step(self, metrics, epoch=None):
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if hasattr(metrics, "numpy"):
            metrics = metrics.numpy()
        if isinstance(metrics, np.ndarray):
            if metrics.size != 1:
                raise ValueError("ReduceOnPlateau: the metric must be one value, got shape %s (reduce it with "
                                 "paddle.mean first)" % (metrics.shape,))
            metrics = metrics.reshape(-1)[0]
        elif isinstance(metrics, bool) or not isinstance(metrics, numbers.Real):
            raise TypeError("metrics must be 'int', 'float', 'np.float', 'numpy.ndarray' or 'paddle.Tensor', "
                            "but receive %s" % type(metrics).__name__)
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            return
        if self.best is None or self._is_better(metrics, self.best):
            self.best = metrics
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.num_bad_epochs > self.patience:
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
            new_lr = max(self.last_lr * self.factor, self.min_lr)
            if self.last_lr - new_lr > self.epsilon:
                self.last_lr = new_lr
                if self.verbose:
                    print("Epoch %d: ReduceOnPlateau set learning rate to %s." % (self.last_epoch, self.last_lr))

    def _is_better(self, current, best):
        margin = abs(best) * self.threshold if self.threshold_mode == "rel" else self.threshold
        return current < best - margin if self.mode == "min" else current > best + margin


class CosineAnnealingDecay(LRScheduler):
    """SGDR's cosine annealing from lr to eta_min over T_max epochs (and back over the next
    T_max), computed recursively from the previous rate as Paddle (and PyTorch) do; a jump
    to an epoch uses the closed form."""

    def __init__(self, learning_rate, T_max, eta_min=0, last_epoch=-1, verbose=False):
        if isinstance(T_max, bool) or not isinstance(T_max, int):
            raise TypeError("The type of 'T_max' in 'CosineAnnealingDecay' must be 'int', but received %s." %
                            type(T_max).__name__)
        if T_max <= 0:
            raise ValueError("CosineAnnealingDecay: T_max must be positive, got %d" % T_max)
        self.T_max = T_max
        self.eta_min = _number(eta_min, "'eta_min' in 'CosineAnnealingDecay'")
        super(CosineAnnealingDecay, self).__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        epoch, period = self.last_epoch, self.T_max
        if epoch == 0:
            return self.base_lr
        if (epoch - 1 - period) % (2 * period) == 0:  # the trough: the rate starts rising again
            return self.last_lr + (self.base_lr - self.eta_min) * (1 - math.cos(math.pi / period)) / 2
        ratio = (1 + math.cos(math.pi * epoch / period)) / (1 + math.cos(math.pi * (epoch - 1) / period))
        return ratio * (self.last_lr - self.eta_min) + self.eta_min

    def _closed_form_lr(self):
        return self.eta_min + (self.base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
