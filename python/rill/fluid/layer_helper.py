"""fluid.layer_helper: what every layer uses to make its parameters, temporaries and ops."""
import copy

from rill import _rill
from rill.fluid import core, unique_name
from rill.fluid.framework import Parameter, Variable, _dtype_name, default_main_program, default_startup_program
from rill.fluid.param_attr import ParamAttr


__all__ = ["LayerHelper"]


class LayerHelper(object):
    def __init__(self, layer_type, **kwargs):
        self.kwargs = kwargs
        self.layer_type = layer_type
        if self.kwargs.get("name") is None:
            self.kwargs["name"] = unique_name.generate(self.layer_type)

    @property
    def name(self):
        return self.kwargs["name"]

    # A layer given main_program= or startup_program= (Fluid 0.14's StaticRNN) builds there.
    @property
    def main_program(self):
        return self.kwargs.get("main_program") or default_main_program()

    @property
    def startup_program(self):
        return self.kwargs.get("startup_program") or default_startup_program()

    def append_op(self, *args, **kwargs):
        self._check_kernel_dtype(kwargs.get("type"), kwargs.get("inputs") or {})
        return self.main_program.current_block().append_op(*args, **kwargs)

    @staticmethod
    def _check_kernel_dtype(op_type, inputs):
        """A TypeError when the op has no kernel for the dtype of the input its kernel is
        chosen by (sqrt of int32), as Fluid's layers check their inputs' dtypes. fp16 passes
        wherever the op has a floating kernel: a device may have it."""
        schema = _rill.op_schema(op_type) if op_type else None
        if not schema or not schema.get("dtype_source") or schema["dtype_source"].startswith("attr:"):
            return
        dtypes = schema["kernel_dtypes"]
        if not dtypes or -1 in dtypes:
            return
        slot = inputs.get(schema["dtype_source"])
        var = slot[0] if isinstance(slot, (list, tuple)) and slot else slot
        if not isinstance(var, Variable) or var.dtype is None or var.dtype in dtypes:
            return
        floating = (core.VarDesc.VarType.FP32, core.VarDesc.VarType.FP64)
        if var.dtype == core.VarDesc.VarType.FP16 and any(d in dtypes for d in floating):
            return
        raise TypeError("The data type of '%s' in %s must be one of [%s], but received %s" %
                        (schema["dtype_source"], op_type, ", ".join(_dtype_name(d) for d in dtypes),
                         _dtype_name(var.dtype)))

    def multiple_input(self, input_param_name="input"):
        inputs = self.kwargs.get(input_param_name, [])
        if isinstance(inputs, Variable):
            return [inputs]
        if isinstance(inputs, (list, tuple)):
            for i in inputs:
                if not isinstance(i, Variable):
                    raise TypeError("%s: %s must be Variables, got %r" % (self.layer_type, input_param_name, i))
            return list(inputs)
        raise TypeError("%s: %s must be a Variable or a list of them" % (self.layer_type, input_param_name))

    def input(self, input_param_name="input"):
        inputs = self.multiple_input(input_param_name)
        if len(inputs) != 1:
            raise ValueError("%s layer takes one %s" % (self.layer_type, input_param_name))
        return inputs[0]

    @property
    def param_attr(self):
        return ParamAttr.to_attr(self.kwargs.get("param_attr", None))

    @property
    def bias_attr(self):
        return ParamAttr.to_attr(self.kwargs.get("bias_attr", None))

    def multiple_param_attr(self, length):
        param_attr = self.param_attr
        if isinstance(param_attr, ParamAttr):
            param_attr = [param_attr]
        if len(param_attr) != 1 and len(param_attr) != length:
            raise ValueError("%s: %d param_attrs for %d inputs" % (self.layer_type, len(param_attr), length))
        if len(param_attr) == 1 and length != 1:
            param_attr = [param_attr[0]] + [copy.deepcopy(param_attr[0]) for _ in range(length - 1)]
        return param_attr

    def iter_inputs_and_params(self, input_param_name="input"):
        inputs = self.multiple_input(input_param_name)
        param_attrs = self.multiple_param_attr(len(inputs))
        for ipt, param_attr in zip(inputs, param_attrs):
            yield ipt, param_attr

    def input_dtype(self, input_param_name="input"):
        dtype = None
        for each in self.multiple_input(input_param_name):
            if dtype is None:
                dtype = each.dtype
            elif dtype != each.dtype:
                raise ValueError("%s: inputs of different dtypes (%s, %s)" % (self.layer_type, dtype, each.dtype))
        return dtype

    def create_parameter(self, attr, shape, dtype, is_bias=False, default_initializer=None):
        attr = copy.deepcopy(attr)
        if not isinstance(attr, ParamAttr):
            raise TypeError("create_parameter takes a ParamAttr")
        suffix = "b" if is_bias else "w"
        if attr.name is None:
            attr.name = unique_name.generate(".".join([self.name, suffix]))
        if default_initializer is None and attr.initializer is None:
            if is_bias:
                attr.set_default_bias_initializer()
            else:
                attr.set_default_param_initializer()
        else:
            attr.set_default_initializer(default_initializer)
        self.startup_program.global_block().create_parameter(
            dtype=dtype, shape=shape, **attr.to_kwargs(with_initializer=True))
        return self.main_program.global_block().create_parameter(dtype=dtype, shape=shape, **attr.to_kwargs())

    def get_parameter(self, name):
        param = self.main_program.global_block().var(name)
        if not isinstance(param, Parameter):
            raise ValueError("%s is not a parameter" % name)
        return param

    def create_tmp_variable(self, dtype, stop_gradient=False):
        return self.main_program.current_block().create_var(
            name=unique_name.generate(".".join([self.name, "tmp"])), dtype=dtype, persistable=False,
            stop_gradient=stop_gradient)

    create_variable_for_type_inference = create_tmp_variable  # Fluid 1.x's name

    def create_variable(self, *args, **kwargs):
        return self.main_program.current_block().create_var(*args, **kwargs)

    def create_global_variable(self, persistable=False, *args, **kwargs):
        return self.main_program.global_block().create_var(*args, persistable=persistable, **kwargs)

    def set_variable_initializer(self, var, initializer):
        if not isinstance(var, Variable):
            raise TypeError("set_variable_initializer takes a Variable")
        v = self.startup_program.global_block().create_var(
            name=var.name, type=var.type, dtype=var.dtype, shape=var.shape, persistable=True)
        initializer(v, self.startup_program.global_block())

    def append_bias_op(self, input_var, dim_start=1, dim_end=None):
        size = list(input_var.shape[dim_start:dim_end])
        bias_attr = self.bias_attr
        if not bias_attr:
            return input_var
        b = self.create_parameter(attr=bias_attr, shape=size, dtype=input_var.dtype, is_bias=True)
        tmp = self.create_tmp_variable(dtype=input_var.dtype)
        self.append_op(type="elementwise_add", inputs={"X": [input_var], "Y": [b]}, outputs={"Out": [tmp]},
                       attrs={"axis": dim_start})
        return tmp

    def append_activation(self, input_var):
        act = self.kwargs.get("act", None)
        if act is None:
            return input_var
        if isinstance(act, str):
            act = {"type": act}
        else:
            act = dict(act)
        tmp = self.create_tmp_variable(dtype=input_var.dtype)
        act_type = act.pop("type")
        self.append_op(type=act_type, inputs={"X": [input_var]}, outputs={"Out": [tmp]}, attrs=act)
        return tmp
