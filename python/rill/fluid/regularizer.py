"""fluid.regularizer: weight decay added to each parameter's gradient before its update,
as Fluid appends it: L2Decay adds coeff * param (a ``scale`` op), L1Decay coeff *
sign(param). A parameter's own regularizer (ParamAttr(regularizer=...)) takes precedence
over the optimizer's ``regularization``.
"""
from rill.fluid import core

__all__ = ["append_regularization_ops", "L1Decay", "L2Decay", "L1DecayRegularizer", "L2DecayRegularizer"]


class WeightDecayRegularizer(object):
    def __call__(self, param, grad, block):
        raise NotImplementedError()


def _decay_var(param, block):
    return block.create_var(dtype=param.dtype, shape=param.shape)


class L2DecayRegularizer(WeightDecayRegularizer):
    def __init__(self, regularization_coeff=0.0):
        self._regularization_coeff = regularization_coeff

    def __call__(self, param, grad, block):
        decay = _decay_var(param, block)
        block.append_op(type="scale", inputs={"X": param}, outputs={"Out": decay},
                        attrs={"scale": float(self._regularization_coeff)})
        return decay

    def __str__(self):
        return "L2Decay, regularization_coeff=%f" % self._regularization_coeff


class L1DecayRegularizer(WeightDecayRegularizer):
    def __init__(self, regularization_coeff=0.0):
        self._regularization_coeff = regularization_coeff

    def __call__(self, param, grad, block):
        sign = _decay_var(param, block)
        decay = _decay_var(param, block)
        block.append_op(type="sign", inputs={"X": param}, outputs={"Out": sign})
        block.append_op(type="scale", inputs={"X": sign}, outputs={"Out": decay},
                        attrs={"scale": float(self._regularization_coeff)})
        return decay

    def __str__(self):
        return "L1Decay, regularization_coeff=%f" % self._regularization_coeff


def append_regularization_ops(parameters_and_grads, regularization=None, add_op="elementwise_add"):
    """Each gradient plus its parameter's decay, added in place by `add_op`: Fluid 0.14's
    elementwise_add, or the sum op Paddle 1.x and 2.x append (the same values); parameters
    without a regularizer (or a gradient) pass through."""
    result = []
    for param, grad in parameters_and_grads:
        regularizer = getattr(param, "regularizer", None) or regularization
        if grad is None or regularizer is None:
            result.append((param, grad))
            continue
        # A sparse gradient (an is_sparse embedding's rows) plus the whole table's decay is a
        # dense gradient, as Paddle 2.x's sum makes it: elementwise_add takes no rows.
        sparse = grad.type == core.VarDesc.VarType.SELECTED_ROWS
        op = "sum" if sparse else add_op
        with param.block.program.optimized_guard([param, grad]):
            term = regularizer(param, grad, grad.block)
            inputs = {"X": [grad, term]} if op == "sum" else {"X": grad, "Y": term}
            if sparse:
                grad = grad.block.create_var(name=grad.name + "@REGULARIZED", dtype=param.dtype, shape=param.shape)
            grad.block.append_op(type=op, inputs=inputs, outputs={"Out": grad})
        result.append((param, grad))
    return result


L1Decay = L1DecayRegularizer
L2Decay = L2DecayRegularizer
