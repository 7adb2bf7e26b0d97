"""fluid.contrib.optimizer: Momentum whose op does an L2 weight decay itself (the
momentum op's regularization_method), as Paddle 1.8+ fuses it."""
import numpy as np

from rill.fluid import optimizer
from rill.fluid.regularizer import L2DecayRegularizer

__all__ = ["Momentum"]


class Momentum(optimizer.MomentumOptimizer):
    """MomentumOptimizer where an L2 weight decay (the optimizer's regularization, or a
    parameter's own L2Decay) is done by the momentum op, not by ops before it; another
    regularizer (L1Decay) is added to the gradient as usual."""

    _decay_add_op = "sum"  # Paddle 1.8+'s op adding a weight decay to its gradient

    def __init__(self, learning_rate, momentum, parameter_list=None, use_nesterov=False, regularization=None,
                 grad_clip=None, multi_precision=False, rescale_grad=1.0, name=None):
        if rescale_grad != 1.0:
            raise NotImplementedError("Momentum: rescale_grad other than 1.0 is not supported")
        self._fused_coeff = regularization._regularization_coeff if isinstance(regularization, L2DecayRegularizer) \
            else None
        optimizer.MomentumOptimizer.__init__(
            self, learning_rate, momentum, use_nesterov=use_nesterov, parameter_list=parameter_list,
            regularization=None if self._fused_coeff is not None else regularization, grad_clip=grad_clip)

    def _fused(self, param):
        """The L2 coefficient the momentum op applies to `param`, or None."""
        own = getattr(param, "regularizer", None)
        if own is not None:
            return own._regularization_coeff if isinstance(own, L2DecayRegularizer) else None
        return self._fused_coeff

    def _append_regularization(self, params_grads):
        fused = [(p, g) for p, g in params_grads if self._fused(p) is not None]
        rest = optimizer.Optimizer._append_regularization(self, [(p, g) for p, g in params_grads
                                                                 if self._fused(p) is None])
        return sorted(fused + rest, key=lambda pair: pair[0].name)

    def _update_attrs(self, param):
        attrs = optimizer.MomentumOptimizer._update_attrs(self, param)
        coeff = self._fused(param)
        attrs["regularization_method"] = "" if coeff is None else "l2_decay"
        attrs["regularization_coeff"] = 0.0 if coeff is None else float(np.float32(coeff))  # a FLOAT attribute
        return attrs
