"""paddle.vision: the detection ops of Paddle 2.x's vision package."""
from rill.paddle.vision import ops  # noqa: F401
