"""fluid.clip: error clipping and gradient clipping, as Fluid does them.

Error clipping clips the gradient of one forward variable, in place, as soon as the
backward pass has computed it, so that the rest of the pass sees it clipped: give the
variable ``set_error_clip(ErrorClipByValue(max, min))`` and pass
``callbacks=[error_clip_callback]`` to append_backward.

Gradient clipping is appended after the backward pass and before
regularization and the updates. GradientClipByValue clips each element
(``clip``), GradientClipByNorm each gradient's L2 norm (``clip_by_norm``), and
GradientClipByGlobalNorm scales every gradient of its group by clip_norm / max(clip_norm,
global norm), the global norm over the group's gradients together. Either Fluid's way, a
clip per parameter (``set_gradient_clip`` or ParamAttr(gradient_clip=...)) that
append_gradient_clip_ops applies, or Paddle 1.8+'s (ClipGradBy*, the same classes): a clip
called on [(param, grad)], as an optimizer's ``grad_clip`` is, clips the gradients of the
parameters whose need_clip holds, one group, and drops the pairs without a gradient.
"""
import warnings

from rill.fluid import core, layers
from rill.fluid.framework import default_main_program

__all__ = ["ErrorClipByValue", "error_clip_callback", "GradientClipByValue", "GradientClipByNorm",
           "GradientClipByGlobalNorm", "set_gradient_clip", "append_gradient_clip_ops", "ClipGradByValue",
           "ClipGradByNorm", "ClipGradByGlobalNorm", "clip_gradients"]


class BaseErrorClipAttr(object):
    def append_clip_op(self, block, grad_name):
        raise NotImplementedError()


class ErrorClipByValue(BaseErrorClipAttr):
    """Clips a variable's gradient to [min, max] (min: -max when not given)."""

    def __init__(self, max, min=None):
        self.max = float(max)
        self.min = -self.max if min is None else float(min)

    def __str__(self):
        return "ByValue, min=%f, max=%f" % (self.min, self.max)

    def append_clip_op(self, block, grad_name):
        block.append_op(type="clip", inputs={"X": [grad_name]}, outputs={"Out": [grad_name]},
                        attrs={"min": self.min, "max": self.max})


def error_clip_callback(block, context):
    """append_backward's callback (called after each gradient op, context mapping gradient
    names to their variables' names): clips, in place, each gradient the last op wrote whose
    variable has an error_clip."""
    for grad_name in block.ops[-1].output_arg_names:
        if grad_name not in context:
            continue
        error_clip = getattr(block.var_recursive(context[grad_name]), "error_clip", None)
        if error_clip is None:
            continue
        if not isinstance(error_clip, BaseErrorClipAttr):
            raise TypeError("Variable's error_clip should be an instance of BaseErrorClipAttr or None.")
        error_clip.append_clip_op(block, grad_name)


class BaseGradientClipAttr(object):
    def _process_context(self, context, param, grad):
        pass

    def _create_operators(self, param, grad):
        raise NotImplementedError()

    def __call__(self, params_grads):
        """[(param, clipped grad)]: each pair with a gradient, clipped by this unless its
        parameter's need_clip is False (Paddle 1.8+'s form, an optimizer's grad_clip)."""
        return _clip([(p, g) for p, g in params_grads if g is not None],
                     lambda param: self if getattr(param, "need_clip", True) else None)


class NullGradientClipAttr(BaseGradientClipAttr):
    def _create_operators(self, param, grad):
        return param, grad


class GradientClipByValue(BaseGradientClipAttr):
    def __init__(self, max, min=None):
        max = float(max)
        min = -max if min is None else float(min)
        if min > max:
            raise ValueError("GradientClipByValue: min (%f) is greater than max (%f)" % (min, max))
        self.max, self.min = max, min

    def __str__(self):
        return "Gradient Clip By Value, min = %f, max=%f" % (self.min, self.max)

    def _create_operators(self, param, grad):
        return param, layers.clip(x=grad, min=self.min, max=self.max)


class GradientClipByNorm(BaseGradientClipAttr):
    def __init__(self, clip_norm):
        self.clip_norm = float(clip_norm)

    def __str__(self):
        return "Gradient Clip By Norm, clip_norm=%f" % self.clip_norm

    def _create_operators(self, param, grad):
        helper_block = grad.block
        out = helper_block.create_var(dtype=grad.dtype, shape=grad.shape)
        helper_block.append_op(type="clip_by_norm", inputs={"X": grad}, outputs={"Out": out},
                               attrs={"max_norm": self.clip_norm})
        return param, out


class GradientClipByGlobalNorm(BaseGradientClipAttr):
    def __init__(self, clip_norm, group_name="default_group"):
        self.clip_norm = float(clip_norm)
        self.group_name = group_name

    def __str__(self):
        return "Gradient Clip By GlobalNorm, global_norm=%f" % self.clip_norm

    def _process_context(self, context, param, grad):
        group = context.setdefault(self.group_name, {"clip_norm": self.clip_norm, "squares": [], "scale": None})
        if group["clip_norm"] != self.clip_norm:
            raise ValueError("gradient clip group %r has clip_norm %f and %f" % (self.group_name, group["clip_norm"],
                                                                                 self.clip_norm))
        block = grad.block
        dense = grad
        if grad.type == core.VarDesc.VarType.SELECTED_ROWS:  # the dense gradient's norm: repeated rows summed
            dense = layers.get_tensor_from_selected_rows(layers.merge_selected_rows(grad))
        square = block.create_var(dtype=grad.dtype, shape=[1])
        block.append_op(type="squared_l2_norm", inputs={"X": dense}, outputs={"Out": square})
        group["squares"].append(square)
        self.context = context

    def _create_operators(self, param, grad):
        group = self.context[self.group_name]
        if group["scale"] is None:
            global_norm = layers.sqrt(layers.sums(input=group["squares"]))
            clip = layers.fill_constant(shape=[1], dtype=grad.dtype, value=self.clip_norm)
            group["scale"] = layers.elementwise_div(x=clip, y=layers.elementwise_max(x=clip, y=global_norm))
        return param, layers.elementwise_mul(x=grad, y=group["scale"])


def set_gradient_clip(clip, param_list=None, program=None):
    """Gives `clip` to every parameter of `program` (default: the main program), or to those
    of param_list (parameters or their names)."""
    if not isinstance(clip, BaseGradientClipAttr):
        raise TypeError("clip must be a GradientClip*, got %r" % type(clip).__name__)
    program = program or default_main_program()
    params = program.global_block().all_parameters() if param_list is None else param_list
    for p in params:
        p = program.global_block().var(p) if isinstance(p, str) else p
        p.gradient_clip_attr = clip


def append_gradient_clip_ops(param_grads):
    """The (param, grad) pairs with each grad clipped by its parameter's gradient_clip_attr."""
    return _clip(param_grads, lambda param: getattr(param, "gradient_clip_attr", None))


def clip_gradients(param_grads, grad_clip):
    """What an optimizer clips with: its grad_clip (a clip, called on the pairs) when it has
    one, else each parameter's own. Both given, the parameters' own are ignored, with a
    warning, as Paddle's."""
    if grad_clip is None:
        return append_gradient_clip_ops(param_grads)
    if any(getattr(p, "gradient_clip_attr", None) is not None for p, _ in param_grads):
        warnings.warn("the optimizer's grad_clip is used; the clips set_gradient_clip or ParamAttr gave the "
                      "parameters are not")
    return grad_clip(param_grads)


def _clip(param_grads, clip_of):
    """The (param, grad) pairs with each grad clipped by clip_of(param) (None: as it is);
    the clips see every gradient they clip before the first is clipped (a global norm)."""
    context = {}
    for param, grad in param_grads:
        clip = clip_of(param)
        if grad is not None and clip is not None:
            clip._process_context(context, param, grad)
    result = []
    for param, grad in param_grads:
        clip = clip_of(param)
        if grad is None or clip is None:
            result.append((param, grad))
            continue
        with param.block.program.optimized_guard([param, grad]):
            result.append(clip._create_operators(param, grad))
    return result


# Paddle 1.8+'s names of the same clips.
ClipGradBase = GradientClipBase = BaseGradientClipAttr
ClipGradByValue = GradientClipByValue
ClipGradByNorm = GradientClipByNorm
ClipGradByGlobalNorm = GradientClipByGlobalNorm
