"""paddle.metric: Paddle 2.x's accuracy."""
from rill.fluid import layers
from rill.paddle import _op

__all__ = ["accuracy"]


def accuracy(input, label, k=1, correct=None, total=None, name=None):
    """The fraction of rows whose label is among the k largest of input's row (Fluid's
    accuracy layer), input float and label int64/int32 checked as Paddle 2.x's."""
    _op.check_variable(input, "input", "accuracy", _op.FLOATS)
    _op.check_variable(label, "label", "accuracy", ("int32", "int64"))
    return layers.accuracy(input, label, k=k, correct=correct, total=total)
