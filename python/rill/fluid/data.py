"""fluid.data: a program input declared with its whole shape (Fluid 1.6's, and Paddle 2.x's
paddle.static.data).

Unlike fluid.layers.data, no batch dimension is put in front: `shape` is the fed tensor's
shape, with -1 (or None) for a dimension any size may fill. The executor checks every feed
of such a variable against it, its dims and its dtype.
"""
from rill.fluid import core
from rill.fluid.layers.io import data as _data_layer


def data(name, shape, dtype="float32", lod_level=0):
    """An input variable `name` of `shape` (None or -1 for a free dimension) and `dtype`."""
    if not isinstance(name, str):
        raise TypeError("data: name must be a str, got %s" % type(name).__name__)
    if not isinstance(shape, (list, tuple)):
        raise TypeError("data: shape must be a list or tuple, got %s" % type(shape).__name__)
    shape = [-1 if d is None else d for d in shape]
    var = _data_layer(name, shape, append_batch_size=False, dtype=dtype, lod_level=lod_level,
                      type=core.VarDesc.VarType.LOD_TENSOR)
    var.need_check_feed = True
    return var
