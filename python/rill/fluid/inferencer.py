"""fluid.Inferencer: Fluid 0.14's high-level inference, the counterpart of fluid.Trainer.

    inferencer = fluid.Inferencer(infer_func=net, param_path="params", place=fluid.CPUPlace())
    results = inferencer.infer({"img": images})

infer_func builds the net and returns its prediction(s); the parameters come from
param_path (what Trainer.save_params wrote), read into a scope of the Inferencer's own.
"""
from rill.fluid import core, executor, framework, io, unique_name
from rill.fluid.trainer import as_list

__all__ = ["Inferencer"]


class Inferencer(object):
    def __init__(self, infer_func, param_path, place=None, parallel=False):
        self.place = place if place is not None else core.CPUPlace()
        self.parallel = parallel
        self.scope = core.Scope()
        self.startup_program = framework.Program()
        self.inference_program = framework.Program()
        with framework.program_guard(self.inference_program, self.startup_program), unique_name.guard():
            self.predict_vars = as_list(infer_func())
        self.inference_program = self.inference_program.clone(for_test=True)
        self.exe = executor.Executor(self.place)
        with executor.scope_guard(self.scope):
            io.load_params(self.exe, param_path, main_program=self.inference_program)

    def infer(self, inputs, return_numpy=True):
        """The predictions for inputs, a dict of data layer name -> value."""
        if not isinstance(inputs, dict):
            raise ValueError("inputs should be a map of {'input_name': input_var}")
        with executor.scope_guard(self.scope):
            return self.exe.run(self.inference_program, feed=inputs, fetch_list=[v.name for v in self.predict_vars],
                                return_numpy=return_numpy)
