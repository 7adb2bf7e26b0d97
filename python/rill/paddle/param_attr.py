"""paddle.ParamAttr: Fluid's ParamAttr under Paddle 2.x's arguments (need_clip says whether
gradient clipping applies to the parameter)."""
from rill.fluid import param_attr


class ParamAttr(param_attr.ParamAttr):
    def __init__(self, name=None, initializer=None, learning_rate=1.0, regularizer=None, trainable=True,
                 do_model_average=False, need_clip=True):
        param_attr.ParamAttr.__init__(self, name=name, initializer=initializer, learning_rate=learning_rate,
                                      regularizer=regularizer, trainable=trainable,
                                      do_model_average=do_model_average)
        self.need_clip = need_clip

    def to_kwargs(self, with_initializer=False):
        kwargs = param_attr.ParamAttr.to_kwargs(self, with_initializer)
        kwargs["need_clip"] = self.need_clip
        return kwargs
