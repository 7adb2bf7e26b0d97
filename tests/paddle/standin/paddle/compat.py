"""paddle.compat as Paddle's tests use it: Python 2's arithmetic in Python 3 (a utility of
Paddle's test code, not an API of the framework)."""
import math

long_type = int  # Python 2's long
int_type = int


def round(x, d=0):
    """Python 2's round: halves away from zero (Python 3 rounds them to even)."""
    p = 10 ** d
    return float(math.floor(abs(x) * p + 0.5)) / p * (1 if x >= 0 else -1)


def floor_division(x, y):
    return x // y


def get_exception_message(exc):
    return str(exc)


def to_text(obj, encoding="utf-8", inplace=False):
    """bytes as str (in a list or set, each); anything else as it is."""
    if isinstance(obj, (list, set)):
        return type(obj)(to_text(o, encoding) for o in obj)
    return obj.decode(encoding) if isinstance(obj, bytes) else obj


def to_bytes(obj, encoding="utf-8", inplace=False):
    """str as bytes (in a list or set, each); anything else as it is."""
    if isinstance(obj, (list, set)):
        return type(obj)(to_bytes(o, encoding) for o in obj)
    return obj.encode(encoding) if isinstance(obj, str) else obj
