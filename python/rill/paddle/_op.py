"""The one way rill.paddle's functions append an op: argument checks as Paddle 2.x makes
them (a TypeError naming the function and argument), then rill.fluid's LayerHelper.

Invariant: every function of rill.paddle builds its ops through `append`, so the checks and
the naming (`name=` becomes the output variable's prefix, as Paddle's LayerHelper makes it)
are the same everywhere.
"""
from rill.fluid import core
from rill.fluid.framework import Variable, convert_np_dtype_to_dtype_
from rill.fluid.layer_helper import LayerHelper
from rill.fluid.layers.checks import check_type, check_variable_and_dtype, numpy_name  # noqa: F401

FLOATS = ("float16", "float32", "float64")
NUMBERS = FLOATS + ("int32", "int64")


def check_variable(x, arg, fn, dtypes=None):
    """A TypeError unless `x` is a Variable (of one of `dtypes`, names, when given)."""
    if dtypes is None:
        check_type(x, arg, (Variable,), fn)
    else:
        check_variable_and_dtype(x, arg, dtypes, fn)


def as_dtype(dtype):
    """The VarType of a dtype given as a name, numpy dtype or VarType."""
    return dtype if isinstance(dtype, int) else convert_np_dtype_to_dtype_(dtype)


def append(op_type, inputs, attrs=None, dtype=None, shape=None, name=None, layer=None, outputs=("Out",),
           stop_gradient=False, output_dtypes=None):
    """Appends `op_type` with `inputs` and `attrs` and returns its output variable (a tuple
    when `outputs` names several slots; each has `dtype`, default the first input's, or its
    own in `output_dtypes` ({slot: dtype}), and `shape`, when known). `layer` names the
    helper (and so the outputs) where it differs from the op, as Paddle's functions name
    theirs."""
    helper = LayerHelper(layer or op_type, name=name)
    first = next(v for vs in inputs.values() for v in (vs if isinstance(vs, (list, tuple)) else [vs]))
    dtype = first.dtype if dtype is None else as_dtype(dtype)
    made = []
    for slot in outputs:
        own = (output_dtypes or {}).get(slot)
        out = helper.create_tmp_variable(dtype=dtype if own is None else as_dtype(own), stop_gradient=stop_gradient)
        if shape is not None:
            out._shape = list(shape)
        made.append(out)
    helper.append_op(type=op_type, inputs=inputs, outputs=dict(zip(outputs, made)), attrs=attrs or {})
    return made[0] if len(made) == 1 else tuple(made)



VarType = core.VarDesc.VarType
