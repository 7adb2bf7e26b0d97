"""fluid.dygraph.Layer (paddle.nn.Layer): what layer objects share: parameters made once,
when the layer is built (in the startup and main programs, as Fluid's layers make them),
ops appended at each call (run at once in dygraph mode), the training flag (train()/eval())
dropout reads, and the state dict: each parameter under its structured name, the attribute
path to it ("weight", "encoder.fc.bias"), as Paddle's Layer names them."""
import collections
import warnings

import numpy as np

from rill.fluid import core, framework
from rill.fluid.layer_helper import LayerHelper
from rill.fluid.param_attr import ParamAttr

__all__ = ["Layer"]


class Layer(object):
    """A callable that appends its ops to the current program; `training` (train()/eval())
    is what dropout reads."""

    def __init__(self, name_scope=None, dtype="float32"):
        self.training = True
        self._dtype = dtype
        self._parameters = []
        self._helper = LayerHelper(name_scope or type(self).__name__.lower())

    def train(self):
        self.training = True

    def eval(self):
        self.training = False

    def create_parameter(self, shape, attr=None, dtype=None, is_bias=False, default_initializer=None):
        attr = ParamAttr.to_attr(attr)
        if attr is False:
            return None
        param = self._helper.create_parameter(attr, list(shape), dtype or self._dtype, is_bias, default_initializer)
        self._parameters.append(param)
        return param

    def parameters(self):
        """This layer's parameters, then those of the layers it holds as attributes."""
        return [param for _, param in self.named_parameters()]

    def named_parameters(self, prefix=""):
        """[(structured name, parameter)] of this layer's parameters, then its sublayers'
        (attributes that are layers, or lists of them: "name.index"), in attribute order; a
        parameter held by no attribute goes by its variable name."""
        named, seen = [], []

        def add(name, param):
            if all(param is not p for p in seen):  # by identity: == on Variables appends an op
                seen.append(param)
                named.append((name, param))
        own = self._parameters
        for attr, value in self.__dict__.items():
            if isinstance(value, framework.Variable) and any(value is p for p in own):
                add(prefix + attr, value)
        for param in own:
            add(prefix + param.name, param)
        for attr, value in self.__dict__.items():
            subs = [(attr, value)] if isinstance(value, Layer) else \
                [("%s.%d" % (attr, i), v) for i, v in enumerate(value) if isinstance(v, Layer)] \
                if isinstance(value, (list, tuple)) else []
            for name, sub in subs:
                for sub_name, param in sub.named_parameters(prefix + name + "."):
                    add(sub_name, param)
        return named

    def state_dict(self, destination=None, include_sublayers=True, structured_name_prefix=""):
        """OrderedDict {structured name: parameter} (the running statistics of a batch norm
        among them); `.numpy()` of each reads it in dygraph mode."""
        state = collections.OrderedDict() if destination is None else destination
        for name, param in self.named_parameters(structured_name_prefix):
            if include_sublayers or "." not in name[len(structured_name_prefix):]:
                state[name] = param
        return state

    def set_state_dict(self, state_dict, include_sublayers=True, use_structured_name=True):
        """Sets each parameter to its value in state_dict (arrays, or another layer's
        parameters), found by structured name (or, use_structured_name=False, by variable
        name). A parameter the dict lacks keeps its value, with a warning naming it; a value
        of another shape or dtype is refused, naming the parameter."""
        for name, param in self.state_dict(include_sublayers=include_sublayers).items():
            key = name if use_structured_name else param.name
            if key not in state_dict:
                warnings.warn("set_state_dict: %s (%s) is not in the state dict; it keeps its value"
                              % (key, param.name))
                continue
            value = state_dict[key]
            value = np.asarray(value.numpy() if isinstance(value, framework.Variable) else value)
            want = framework.dtype_to_np(param.dtype)
            if list(value.shape) != list(param.shape) or value.dtype != want:
                raise ValueError("set_state_dict: %s (%s) is %s %s, the state dict gives %s %s"
                                 % (key, param.name, np.dtype(want), list(param.shape), value.dtype,
                                    list(value.shape)))
            _scope_of(param).var(param.name).get_tensor().set(np.ascontiguousarray(value), core.CPUPlace())

    set_dict = load_dict = set_state_dict

    def clear_gradients(self):
        """Zeroes the gradients of the parameters (dynamic graph mode)."""
        for p in self.parameters():
            if p.block.program._eager is not None:
                p.clear_gradient()

    def forward(self, *args, **kwargs):
        raise NotImplementedError("%s has no forward" % type(self).__name__)

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)


def _scope_of(param):
    """Where `param`'s value lives: its dygraph runner's scope, or the global scope."""
    eager = param.block.program._eager
    if eager is not None:
        return eager.scope
    from rill.fluid.executor import global_scope
    return global_scope()
