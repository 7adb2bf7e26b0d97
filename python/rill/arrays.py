"""Numpy arrays Rill can take without a copy.

Executor.run borrows a fed array instead of copying it when the array is C-contiguous,
64-byte aligned (what the SDK promises kernels of every tensor) and at least 64 bytes, and
no op of the program writes its variable. numpy's own allocations are 16-byte aligned, so
arrays to be fed often and large (a 64 MB batch) are best made with ``rill.empty``.
"""
import numpy as np

__all__ = ["empty", "is_borrowable"]

ALIGNMENT = 64


def empty(shape, dtype="float32"):
    """An uninitialized C-contiguous array whose data is 64-byte aligned. ``shape`` is an int
    or a sequence of non-negative ints, as numpy.empty takes it."""
    dtype = np.dtype(dtype)
    dims = (shape,) if np.isscalar(shape) else tuple(shape)
    for d in dims:
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 0:
            raise ValueError("rill.empty: shape %r: each dimension must be a non-negative int, got %r" % (shape, d))
    count = int(np.prod(dims, dtype=np.int64))
    raw = np.empty(count * dtype.itemsize + ALIGNMENT, np.uint8)
    offset = (-raw.ctypes.data) % ALIGNMENT
    return raw[offset:offset + count * dtype.itemsize].view(dtype).reshape(shape)


def is_borrowable(array):
    """Whether Executor.run could feed ``array`` without copying it (if no op writes it)."""
    return (isinstance(array, np.ndarray) and array.flags.c_contiguous and array.nbytes >= ALIGNMENT and
            array.ctypes.data % ALIGNMENT == 0)
