"""paddle.optimizer.lr: the learning-rate schedules (rill.fluid.lr_scheduler, which fluid's
optimizers also take)."""
from rill.fluid.lr_scheduler import *  # noqa: F401,F403
from rill.fluid.lr_scheduler import __all__  # noqa: F401
