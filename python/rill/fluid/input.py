"""fluid.embedding and fluid.one_hot: Fluid 1.8's forms of the layers, whose output keeps
every dim of the ids (no trailing 1 is dropped) and adds one (the lookup_table_v2 and
one_hot_v2 ops)."""
from rill.fluid.framework import Variable
from rill.fluid.layer_helper import LayerHelper
from rill.fluid.layers.checks import check_dtype, check_type, check_variable_and_dtype

__all__ = ["embedding", "one_hot"]


def embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None,
              dtype="float32"):
    """The rows of a [size[0], size[1]] table at the int64 ids `input`: input's shape + [size[1]]."""
    check_variable_and_dtype(input, "input", ["int64"], "fluid.embedding")
    check_dtype(dtype, "dtype", ["float16", "float32", "float64"], "fluid.embedding")
    helper = LayerHelper("embedding", param_attr=param_attr)
    w = helper.create_parameter(attr=helper.param_attr, shape=size, dtype=dtype, is_bias=False)
    out = helper.create_tmp_variable(dtype=dtype)
    out._shape = list(input.shape) + [size[1]]
    padding_idx = -1 if padding_idx is None else padding_idx if padding_idx >= 0 else size[0] + padding_idx
    helper.append_op(type="lookup_table_v2", inputs={"Ids": input, "W": w}, outputs={"Out": out},
                     attrs={"is_sparse": is_sparse, "is_distributed": is_distributed, "padding_idx": padding_idx})
    return out


def one_hot(input, depth, allow_out_of_range=False):
    """input (int32 or int64 class indices) as one-hot float32 rows: input's shape + [depth];
    depth an int or a one-element int Variable."""
    check_variable_and_dtype(input, "input", ["int32", "int64"], "fluid.one_hot")
    check_type(depth, "depth", (int, Variable), "fluid.one_hot")
    helper = LayerHelper("one_hot_v2")
    inputs, attrs = {"X": input}, {"allow_out_of_range": allow_out_of_range}
    if isinstance(depth, Variable):
        depth.stop_gradient = True
        inputs["depth_tensor"] = depth
    else:
        attrs["depth"] = depth
    out = helper.create_tmp_variable(dtype="float32", stop_gradient=True)
    out._shape = list(input.shape) + [depth if isinstance(depth, int) else -1]
    helper.append_op(type="one_hot_v2", inputs=inputs, outputs={"Out": out}, attrs=attrs)
    return out
