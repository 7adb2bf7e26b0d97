"""paddle.tensor.math: elementwise arithmetic (numpy's broadcasting), reductions, matrix
products and the unary math functions, as Paddle 2.x's static graph builds them."""
from rill.fluid import layers
from rill.fluid.framework import Variable
from rill.paddle import _op

__all__ = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "mod", "maximum", "minimum", "pow",
           "sum", "add_n", "scale", "clip", "sign", "stanh", "cumsum", "mm", "matmul", "bmm", "all", "any", "abs", "exp",
           "log", "sqrt", "rsqrt", "square", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
           "erf", "floor", "ceil", "round", "reciprocal", "log2", "log10", "log1p", "expm1"]


def broadcast_shape(a, b):
    """numpy's broadcast of shapes a and b; -1 (unknown) where a dim is not known yet."""
    a, b = list(a), list(b)
    a, b = [1] * (len(b) - len(a)) + a, [1] * (len(a) - len(b)) + b
    return [d if e == 1 else e if d == 1 else d if d == e else -1 for d, e in zip(a, b)]


def _elementwise(op_type, x, y, name):
    _op.check_variable(x, "x", op_type, _op.NUMBERS)
    _op.check_variable(y, "y", op_type, _op.NUMBERS)
    return _op.append(op_type, {"X": x, "Y": y}, {"axis": -1}, shape=broadcast_shape(x.shape, y.shape), name=name)


def add(x, y, name=None):
    return _elementwise("elementwise_add", x, y, name)


def subtract(x, y, name=None):
    return _elementwise("elementwise_sub", x, y, name)


def multiply(x, y, name=None):
    return _elementwise("elementwise_mul", x, y, name)


def divide(x, y, name=None):
    return _elementwise("elementwise_div", x, y, name)


def floor_divide(x, y, name=None):
    return _elementwise("elementwise_floordiv", x, y, name)


def remainder(x, y, name=None):
    return _elementwise("elementwise_mod", x, y, name)


mod = remainder


def maximum(x, y, name=None):
    return _elementwise("elementwise_max", x, y, name)


def minimum(x, y, name=None):
    return _elementwise("elementwise_min", x, y, name)


def pow(x, y, name=None):
    """x ** y: y a number (the pow op's factor) or a tensor (elementwise_pow)."""
    if isinstance(y, Variable):
        return _elementwise("elementwise_pow", x, y, name)
    if isinstance(y, bool) or not isinstance(y, (int, float)):
        raise TypeError("y must be scalar or tensor type, but received: %s" % type(y).__name__)
    _op.check_variable(x, "x", "pow", _op.NUMBERS)
    return _op.append("pow", {"X": x}, {"factor": float(y)}, shape=x.shape, name=name)


def _axes(axis, fn):
    if axis is not None and not isinstance(axis, (int, list, tuple)) or isinstance(axis, bool):
        raise TypeError("The type of 'axis' in %s must be int, list, tuple or None, but received %s" %
                        (fn, type(axis).__name__))
    return [] if axis is None else [axis] if isinstance(axis, int) else list(axis)


def reduce(op_type, x, axis, keepdim, name, fn, dtypes):
    """Reduces x over `axis` (None or [] for all of it) with op_type."""
    _op.check_variable(x, "x", fn, dtypes)
    dims = _axes(axis, fn)
    rank = len(x.shape)
    every = not dims or len(dims) == rank
    kept = [] if every else [d % rank if rank else d for d in dims]
    shape = [1 if (every or i in kept) else n for i, n in enumerate(x.shape)] if keepdim else \
        [n for i, n in enumerate(x.shape) if not (every or i in kept)]
    return _op.append(op_type, {"X": x}, {"dim": dims or [0], "keep_dim": bool(keepdim), "reduce_all": every},
                      shape=shape, name=name, layer=fn)


def sum(x, axis=None, dtype=None, keepdim=False, name=None):
    """The sum over `axis`; `dtype` float64 of a float32 x, or int64 of an int32 x, sums in
    the wider type. Another `dtype` narrower than x is a ValueError, as Paddle's."""
    _op.check_variable(x, "x", "sum", ("float32", "float64", "int32", "int64"))
    if dtype is not None:
        dtype = _op.numpy_name(_op.as_dtype(dtype))
        if dtype not in ("float32", "float64", "int32", "int64"):
            raise TypeError("The data type of 'dtype' in sum must be one of ['float32', 'float64', 'int32', 'int64'], "
                            "but received %s" % dtype)
        own = _op.numpy_name(x.dtype)
        if own == "float64" and dtype in ("float32", "int32") or own == "int64" and dtype == "int32":
            raise ValueError("The input(x)'s dtype is %s but the attr(dtype) of sum is %s, which may cause data "
                             "type overflows. Please reset attr(dtype) of sum." % (own, dtype))
        if (own, dtype) in (("float32", "float64"), ("int32", "int64")):
            x = layers.cast(x, dtype)
    return reduce("reduce_sum", x, axis, keepdim, name, "sum", _op.NUMBERS)


def all(x, axis=None, keepdim=False, name=None):
    return reduce("reduce_all", x, axis, keepdim, name, "all", ("bool",))


def any(x, axis=None, keepdim=False, name=None):
    return reduce("reduce_any", x, axis, keepdim, name, "any", ("bool",))


def add_n(inputs, name=None):
    """The sum of the tensors of `inputs` (one tensor, or a list of them of one shape)."""
    inputs = [inputs] if isinstance(inputs, Variable) else list(inputs)
    for i, v in enumerate(inputs):
        _op.check_variable(v, "inputs[%d]" % i, "add_n", _op.NUMBERS)
    return _op.append("sum", {"X": inputs}, shape=inputs[0].shape, name=name, layer="add_n")


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    """scale * x + bias (bias_after_scale) or scale * (x + bias); `scale` a number or a
    one-element tensor."""
    _op.check_variable(x, "x", "scale", _op.NUMBERS + ("uint8", "int8", "int16"))
    inputs = {"X": x}
    attrs = {"bias": float(bias), "bias_after_scale": bool(bias_after_scale)}
    if isinstance(scale, Variable):
        inputs["ScaleTensor"] = scale
    else:
        attrs["scale"] = float(scale)
    out = _op.append("scale", inputs, attrs, shape=x.shape, name=name)
    return getattr(layers, act)(out) if act else out


_FLOAT_MIN, _FLOAT_MAX = -3.4028234663852886e38, 3.4028234663852886e38


def clip(x, min=None, max=None, name=None):
    """x limited to [min, max]; each bound a number, a one-element tensor, or None for none."""
    _op.check_variable(x, "x", "clip", ("float32", "float64", "int32", "int64"))
    inputs = {"X": x}
    attrs = {"min": _FLOAT_MIN, "max": _FLOAT_MAX}
    for bound, value, slot in (("min", min, "Min"), ("max", max, "Max")):
        if isinstance(value, Variable):
            _op.check_variable(value, bound, "clip", ("float32", "float64", "int32", "int64"))
            inputs[slot] = value
        elif value is not None:
            attrs[bound] = float(value)
    return _op.append("clip", inputs, attrs, shape=x.shape, name=name)


def stanh(x, scale_a=0.67, scale_b=1.7159, name=None):
    _op.check_variable(x, "x", "stanh", _op.FLOATS)
    return _op.append("stanh", {"X": x}, {"scale_a": float(scale_a), "scale_b": float(scale_b)}, shape=x.shape,
                      name=name)


def cumsum(x, axis=None, dtype=None, name=None):
    """Running sums along `axis`, or over x flattened when None; in `dtype` when given."""
    _op.check_variable(x, "x", "cumsum", ("float32", "float64", "int32", "int64"))
    if dtype is not None and _op.as_dtype(dtype) != x.dtype:
        x = layers.cast(x, _op.numpy_name(_op.as_dtype(dtype)))
    attrs = {"flatten": True} if axis is None else {"axis": int(axis), "flatten": False}
    shape = None if axis is None else x.shape
    return _op.append("cumsum", {"X": x}, attrs, shape=shape, name=name)


def matmul(x, y, transpose_x=False, transpose_y=False, name=None):
    """The matrix product of x and y (numpy's matmul: 1-D operands and broadcast batches)."""
    _op.check_variable(x, "x", "matmul", ("float16", "float32", "float64"))
    _op.check_variable(y, "y", "matmul", ("float16", "float32", "float64"))
    return _op.append("matmul_v2", {"X": x, "Y": y}, {"trans_x": bool(transpose_x), "trans_y": bool(transpose_y)},
                      name=name, layer="matmul")


def mm(input, mat2, name=None):
    """The matrix product of input and mat2, whose batch dims (if both have them) must be
    equal where known: a ValueError otherwise, as Paddle's mm checks them."""
    _op.check_variable(input, "input", "mm", _op.FLOATS)
    _op.check_variable(mat2, "mat2", "mm", _op.FLOATS)
    xs = [1] + list(input.shape) if len(input.shape) == 1 else list(input.shape)
    ys = list(mat2.shape) + [1] if len(mat2.shape) == 1 else list(mat2.shape)
    if xs[-1] != ys[-2] and xs[-1] != -1 and ys[-2] != -1:
        raise ValueError("After performing an optional transpose, Input X's width should be equal to Y's width for "
                         "multiplication prerequisites. But received X's shape: %s, Y's shape: %s" % (xs, ys))
    if len(xs) > 2 and len(ys) > 2:
        for i, dim in enumerate(xs[:-2]):
            if dim >= 0 and ys[i] >= 0 and dim != ys[i]:
                raise ValueError("When the matrix is larger than 2 dimensions, the higher dimensional values of the "
                                 "two matrices need to be equal. But received x_shape[%d] != y_shape[%d]. X's shape: "
                                 "%s, Y's shape: %s." % (i, i, xs, ys))
    return matmul(input, mat2, name=name)


def bmm(x, y, name=None):
    """x [B, M, K] times y [B, K, N], matrix by matrix: a ValueError where the shapes do not
    fit (read as Paddle's bmm reads them, from arrays too)."""
    xs, ys = list(x.shape), list(y.shape)
    if not len(xs) == len(ys) == 3:
        raise ValueError("x and y should be 3-dimensional. But received x's dimention: %s, y's dimention: %s"
                         % (xs, ys))
    if xs[2] != ys[1]:
        raise ValueError("x's width must be equal with y's height. But received x's shape: %s, y's shape: %s"
                         % (xs, ys))
    if xs[0] != ys[0]:
        raise ValueError("x's batch (shape[0]) must be equal with y's batch (shape[0]). But received x's shape: %s, "
                         "y's shape: %s" % (xs, ys))
    _op.check_variable(x, "x", "bmm", _op.FLOATS)
    _op.check_variable(y, "y", "bmm", _op.FLOATS)
    return _op.append("bmm", {"X": x, "Y": y}, shape=[xs[0], xs[1], ys[2]], name=name)


def _unary(op_type, fn=None):
    fn = fn or op_type

    def function(x, name=None):
        _op.check_variable(x, "x", fn, _op.FLOATS)
        return _op.append(op_type, {"X": x}, shape=x.shape, name=name, layer=fn)
    function.__name__ = fn
    function.__doc__ = "%s(x), elementwise." % fn
    return function


for _fn in ("abs", "exp", "log", "sqrt", "rsqrt", "square", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
            "cosh", "tanh", "erf", "floor", "ceil", "round", "reciprocal", "log2", "log10", "log1p", "expm1"):
    globals()[_fn] = _unary(_fn)


def sign(x, name=None):
    _op.check_variable(x, "x", "sign", _op.FLOATS)
    return _op.append("sign", {"X": x}, shape=x.shape, name=name)
