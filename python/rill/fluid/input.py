"""fluid.embedding and fluid.one_hot: Fluid 1.8's forms of the layers, whose output keeps
every dim of the ids (no trailing 1 is dropped) and adds one (the lookup_table_v2 and
one_hot_v2 ops)."""
from rill.fluid.layers.nn import lookup, one_hot_of

__all__ = ["embedding", "one_hot"]


def embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None,
              dtype="float32"):
    """The rows of a [size[0], size[1]] table at the int64 ids `input`: input's shape + [size[1]]."""
    return lookup("lookup_table_v2", "fluid.embedding", input, size, getattr(input, "shape", ()), is_sparse,
                  is_distributed, padding_idx, param_attr, dtype)


def one_hot(input, depth, allow_out_of_range=False):
    """input (int32 or int64 class indices) as one-hot float32 rows: input's shape + [depth];
    depth an int or a one-element int Variable."""
    return one_hot_of("one_hot_v2", "fluid.one_hot", input, depth, allow_out_of_range, getattr(input, "shape", ()))
