"""paddle.regularizer: Paddle 2.x's names for Fluid's weight decays (coeff is Fluid's
regularization_coeff)."""
from rill.fluid import regularizer

__all__ = ["L1Decay", "L2Decay"]


class L1Decay(regularizer.L1DecayRegularizer):
    def __init__(self, coeff=0.0):
        regularizer.L1DecayRegularizer.__init__(self, regularization_coeff=coeff)


class L2Decay(regularizer.L2DecayRegularizer):
    def __init__(self, coeff=0.0):
        regularizer.L2DecayRegularizer.__init__(self, regularization_coeff=coeff)
