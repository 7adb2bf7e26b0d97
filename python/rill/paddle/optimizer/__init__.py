"""paddle.optimizer: Paddle 2.x's optimizers (optimizers.py) and learning-rate schedules
(lr.py, also paddle.optimizer.lr)."""
from rill.paddle.optimizer import lr  # noqa: F401
from rill.paddle.optimizer.optimizers import SGD, Momentum, Adam, Adamax, RMSProp, Adadelta  # noqa: F401

__all__ = ["SGD", "Momentum", "Adam", "Adamax", "RMSProp", "Adadelta", "lr"]
