"""fluid.layers.io: the program's inputs."""
from rill.fluid import core
from rill.fluid.layer_helper import LayerHelper

__all__ = ["data"]


def data(name, shape, append_batch_size=True, dtype="float32", lod_level=0, type=core.VarDesc.VarType.LOD_TENSOR,
         stop_gradient=True):
    """An input variable of the global block: ``shape`` of one example, with a batch
    dimension (-1) in front unless ``append_batch_size`` is False or a dimension is -1."""
    helper = LayerHelper("data", **locals())
    shape = list(shape)
    for i in range(len(shape)):
        if shape[i] is None:
            shape[i] = -1
            append_batch_size = False
        elif shape[i] < 0:
            append_batch_size = False
    if append_batch_size:
        shape = [-1] + shape
    return helper.create_global_variable(name=name, shape=shape, dtype=dtype, type=type,
                                         stop_gradient=stop_gradient, lod_level=lod_level, is_data=True)
