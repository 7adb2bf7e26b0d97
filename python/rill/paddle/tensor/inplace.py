"""The in-place forms of Paddle 2.x's tensor functions (add_, reshape_, ...): in dynamic
mode x takes the result and is returned; in static mode the result is a new variable, as
Paddle's (its in-place forms act in place only in dynamic mode)."""
from rill.fluid.layer_helper import LayerHelper
from rill.paddle.tensor import manipulation, math

__all__ = ["add_", "subtract_", "scale_", "clip_", "tanh_", "exp_", "sqrt_", "rsqrt_", "ceil_", "floor_", "round_",
           "reciprocal_", "reshape_", "flatten_", "squeeze_", "unsqueeze_"]


def inplace(function, keeps_shape=True):
    """The in-place form of `function` (whose first argument is x). Where the function
    keeps x's shape, a result of another shape (x broadcast to a larger one) is a
    ValueError, as Paddle's."""
    def in_place(x, *args, **kwargs):
        out = function(x, *args, **kwargs)
        if x.block.program._eager is None:
            return out
        if keeps_shape and list(out.shape) != list(x.shape):
            raise ValueError("The shape of broadcast output %s is different from that of inplace tensor %s in the "
                             "Inplace operation." % (list(out.shape), list(x.shape)))
        LayerHelper("assign").append_op(type="assign", inputs={"X": [out]}, outputs={"Out": [x]})
        return x
    in_place.__name__ = function.__name__ + "_"
    in_place.__doc__ = "%s, in place (dynamic mode)." % function.__name__
    return in_place


add_ = inplace(math.add)
subtract_ = inplace(math.subtract)
scale_ = inplace(math.scale)
clip_ = inplace(math.clip)
tanh_ = inplace(math.tanh)
exp_ = inplace(math.exp)
sqrt_ = inplace(math.sqrt)
rsqrt_ = inplace(math.rsqrt)
ceil_ = inplace(math.ceil)
floor_ = inplace(math.floor)
round_ = inplace(math.round)
reciprocal_ = inplace(math.reciprocal)
reshape_ = inplace(manipulation.reshape, keeps_shape=False)
flatten_ = inplace(manipulation.flatten, keeps_shape=False)
squeeze_ = inplace(manipulation.squeeze, keeps_shape=False)
unsqueeze_ = inplace(manipulation.unsqueeze, keeps_shape=False)
