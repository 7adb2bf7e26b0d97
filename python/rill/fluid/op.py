"""fluid.op: Operator, one op run on a scope's variables (Fluid's paddle.fluid.op).

    op = Operator("sgd", Param="Param", Grad="Grad", ParamOut="Param", LearningRate="lr")
    op.run(scope, place)

Keyword arguments naming the op's input or output slots (from its schema) give the slot's
variable names (one, or a list); the others are attributes, of the types the schema
declares. run builds a program of the one op and runs it in `scope`, where the variables
are.
"""
from rill import _rill
from rill.fluid import framework
from rill.fluid.desc import ProgramDesc


class Operator(object):
    def __init__(self, type, **kwargs):
        self._type = type
        schema = framework.registered_schema(type)
        self._inputs, self._outputs, self._attrs = {}, {}, {}
        inputs = set(s["name"] for s in schema["inputs"])
        outputs = set(s["name"] for s in schema["outputs"])
        self._declared = dict((n, a["type"]) for n, a in schema["attrs"].items())
        for key, value in kwargs.items():
            names = [value] if isinstance(value, str) else value
            if key in inputs:
                self._inputs[key] = list(names)
            elif key in outputs:
                self._outputs[key] = list(names)
            else:
                self._attrs[key] = value

    def type(self):
        return self._type

    def input(self, slot):
        return self._inputs.get(slot, [])

    def output(self, slot):
        return self._outputs.get(slot, [])

    def run(self, scope, place):
        desc = ProgramDesc()
        op = desc.blocks[0].ops.add()
        op.type = self._type
        for slots, target in ((self._inputs, op.inputs), (self._outputs, op.outputs)):
            for slot, names in slots.items():
                target.add(parameter=slot, arguments=names)
        for name, value in self._attrs.items():
            framework._set_attr_desc(op.attrs.add(), name, value, self._declared.get(name), self._type)
        device = getattr(place, "device_id", 0) if type(place).__name__ == "CUDAPlace" else -1
        _rill.PreparedProgram(desc.SerializeToString(), 1, device).run(scope, [])

    @staticmethod
    def get_op_inputs(op_type):
        return [(s["name"], s["duplicable"]) for s in framework.registered_schema(op_type)["inputs"]]

    @staticmethod
    def get_op_outputs(op_type):
        return [(s["name"], s["duplicable"]) for s in framework.registered_schema(op_type)["outputs"]]

    @staticmethod
    def get_op_input_names(op_type):
        return [s["name"] for s in framework.registered_schema(op_type)["inputs"]]

    @staticmethod
    def get_op_output_names(op_type):
        return [s["name"] for s in framework.registered_schema(op_type)["outputs"]]

    @staticmethod
    def get_op_attr_names(op_type):
        return list(framework.registered_schema(op_type)["attrs"])
