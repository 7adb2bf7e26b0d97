"""fluid.dygraph.Layer (paddle.nn.Layer): what layer objects share: parameters made once,
when the layer is built (in the startup and main programs, as Fluid's layers make them),
ops appended at each call (run at once in dygraph mode), and the training flag
(train()/eval()) dropout reads."""
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
        params = list(self._parameters)
        for value in self.__dict__.values():
            if isinstance(value, Layer):
                # by identity: == on Variables appends an equal op
                params += [p for p in value.parameters() if all(p is not q for q in params)]
        return params

    def clear_gradients(self):
        """Zeroes the gradients of the parameters (dynamic graph mode)."""
        for p in self.parameters():
            if p.block.program._eager is not None:
                p.clear_gradient()

    def forward(self, *args, **kwargs):
        raise NotImplementedError("%s has no forward" % type(self).__name__)

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)
