"""paddle.tensor.search: the k largest (or smallest) along an axis, and each row's elements at
given indices (index_sample)."""
from rill.fluid.framework import Variable
from rill.paddle import _op

__all__ = ["topk", "index_sample"]


def topk(x, k, axis=None, largest=True, sorted=True, name=None):
    """(values, int64 indices) of the k largest (largest=False: smallest) entries of x along
    `axis` (the last by default); k an int or a one-element int tensor."""
    _op.check_variable(x, "x", "topk", ("float32", "float64", "int32", "int64"))
    inputs, attrs = {"X": x}, {"largest": bool(largest), "sorted": bool(sorted)}
    if isinstance(k, Variable):
        inputs["K"] = k
    else:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError("topk: k must be a positive int or a tensor, got %r" % (k,))
        attrs["k"] = k
    if axis is not None:
        attrs["axis"] = int(axis)
    shape = list(x.shape)
    if shape:
        shape[(-1 if axis is None else int(axis)) % len(shape)] = attrs.get("k", -1)
    return _op.append("top_k_v2", inputs, attrs, shape=shape, name=name, outputs=("Out", "Indices"),
                      output_dtypes={"Indices": "int64"})


def index_sample(x, index):
    """out[b, k] = x[b, index[b, k]] for x [B, N] and index [B, K] (int32 or int64)."""
    _op.check_variable(x, "x", "index_sample", ("float32", "float64", "int32", "int64"))
    _op.check_variable(index, "index", "index_sample", ("int32", "int64"))
    return _op.append("index_sample", {"X": x, "Index": index}, shape=[x.shape[0], index.shape[1]])
