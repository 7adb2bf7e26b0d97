"""Paddle 2.x's F.local_response_norm: each element divided by (k + alpha times the mean
of the squares of the `size` channels around it)^beta, for 3-, 4- and 5-D inputs, channels
first or last. Built as Paddle builds it (square, pad the channel dim, average over the
window, scale, pow, divide), with the window averaged by one 2-D pooling over the input
seen as [N, 1, C, rest] (or [N, 1, rest, C]), so any rank takes the same ops."""
from rill.fluid import layers
from rill.paddle import _op
from rill.paddle.tensor import manipulation, math

__all__ = ["local_response_norm"]

_FORMATS = ("NCL", "NLC", "NCHW", "NHWC", "NCDHW", "NDHWC")


def local_response_norm(x, size, alpha=1e-4, beta=0.75, k=1.0, data_format="NCHW", name=None):
    _op.check_variable(x, "x", "local_response_norm", ("float32",))
    if data_format not in _FORMATS:
        raise ValueError("data_format should be in one of [NCL, NCHW, NCDHW, NLC, NHWC, NDHWC], but got %s" %
                         data_format)
    if len(x.shape) < 3:
        raise ValueError("Expected 3D or higher dimensionality input, but got %d dimensions" % len(x.shape))
    channel_last = data_format[-1] == "C"
    channels = x.shape[-1] if channel_last else x.shape[1]
    squares = math.multiply(x, x)
    before, after = size // 2, (size - 1) // 2
    if channel_last:
        planes = manipulation.reshape(squares, [0, 1, -1, channels])
        padded = layers.pad(planes, [0, 0, 0, 0, 0, 0, before, after])
        window = [1, size]
    else:
        planes = manipulation.reshape(squares, [0, 1, channels, -1])
        padded = layers.pad(planes, [0, 0, 0, 0, before, after, 0, 0])
        window = [size, 1]
    mean = layers.pool2d(padded, pool_size=window, pool_type="avg", pool_stride=1)
    div = math.pow(math.scale(manipulation.reshape(mean, [0] + list(x.shape[1:])), alpha, k), beta)
    return math.divide(x, div, name=name)
