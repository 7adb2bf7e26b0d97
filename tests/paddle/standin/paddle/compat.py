"""paddle.compat as Paddle's tests use it: Python 2's arithmetic in Python 3 (a utility of
Paddle's test code, not an API of the framework)."""
import math


def round(x, d=0):
    """Python 2's round: halves away from zero (Python 3 rounds them to even)."""
    p = 10 ** d
    return float(math.floor(abs(x) * p + 0.5)) / p * (1 if x >= 0 else -1)


def floor_division(x, y):
    return x // y


def get_exception_message(exc):
    return str(exc)
