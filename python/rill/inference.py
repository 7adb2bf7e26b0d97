"""rill.inference: Paddle Inference's Python API (``paddle.inference``) on Rill's runtime.

    from rill.inference import Config, create_predictor
    config = Config("model.pdmodel", "model.pdiparams")     # or Config(model_dir)
    predictor = create_predictor(config)
    handle = predictor.get_input_handle(predictor.get_input_names()[0])
    handle.reshape(image.shape)
    handle.copy_from_cpu(image)
    predictor.run()
    scores = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()

A predictor loads the model as ``rill run`` and ``rill.fluid.io.load_inference_model`` do
(any layout Paddle saves; a model that writes files or reaches outside its directory is
refused, see load_inference_model) into a scope of its own, and runs it with an Executor of
its own. The inputs are the program's feeds and the outputs its fetches, in column order.
Paddle's tuning switches (IR passes, memory optimization, MKLDNN, thread counts, glog) are
accepted and change nothing: Rill's runtime needs none of them to run the model.
"""
import os

import numpy as np

from rill.fluid import core, executor, io

__all__ = ["Config", "Predictor", "Tensor", "create_predictor"]


class Config(object):
    """Where the model is: Config(model_dir), or Config(prog_file, params_file)."""

    def __init__(self, model_dir_or_prog_file=None, params_file=None):
        self._model_dir = self._prog_file = self._params_file = None
        if params_file is not None:
            self.set_model(model_dir_or_prog_file, params_file)
        elif model_dir_or_prog_file is not None:
            self.set_model(model_dir_or_prog_file)
        self._gpu_device = None

    def set_model(self, model_dir_or_prog_file, params_file=None):
        if params_file is None:
            self._model_dir, self._prog_file, self._params_file = model_dir_or_prog_file, None, None
        else:
            self._model_dir, self._prog_file, self._params_file = None, model_dir_or_prog_file, params_file

    def set_prog_file(self, path):
        self._prog_file = path

    def set_params_file(self, path):
        self._params_file = path

    def model_dir(self):
        return self._model_dir or ""

    def prog_file(self):
        return self._prog_file or ""

    def params_file(self):
        return self._params_file or ""

    def enable_use_gpu(self, memory_pool_init_size_mb=100, device_id=0):
        self._gpu_device = device_id

    def disable_gpu(self):
        self._gpu_device = None

    def use_gpu(self):
        return self._gpu_device is not None

    def gpu_device_id(self):
        return self._gpu_device or 0

    # Paddle's tuning switches: accepted, and nothing to do on Rill's runtime.
    def switch_ir_optim(self, x=True):
        pass

    def enable_memory_optim(self, x=True):
        pass

    def enable_mkldnn(self):
        pass

    def set_cpu_math_library_num_threads(self, n):
        pass

    def disable_glog_info(self):
        pass

    def switch_use_feed_fetch_ops(self, x=True):
        pass

    def switch_specify_input_names(self, x=True):
        pass

    def _load(self, scope, exe):
        """Loads the model into ``scope``: (program, feed names, fetch variables)."""
        with executor.scope_guard(scope):
            if self._prog_file:
                if not self._params_file:
                    raise ValueError("Config: a program file needs its parameter file (Config(prog_file, params_file))")
                directory = os.path.dirname(os.path.abspath(self._prog_file))
                if os.path.dirname(os.path.abspath(self._params_file)) != directory:
                    raise ValueError("Config: the program file %r and the parameter file %r must be in one directory"
                                     % (self._prog_file, self._params_file))
                return io.load_inference_model(directory, exe, os.path.basename(self._prog_file),
                                               os.path.basename(self._params_file))
            if not self._model_dir:
                raise ValueError("Config: no model given (Config(model_dir) or Config(prog_file, params_file))")
            return io.load_inference_model(self._model_dir, exe)


class Tensor(object):
    """An input or output of a predictor, by name."""

    def __init__(self, name, predictor, is_input):
        self.name = name
        self._predictor = predictor
        self._is_input = is_input
        self._shape = None

    def reshape(self, shape):
        if not self._is_input:
            raise RuntimeError("output %r: only inputs are reshaped" % self.name)
        self._shape = [int(d) for d in shape]

    def copy_from_cpu(self, data):
        if not self._is_input:
            raise RuntimeError("output %r: copy_from_cpu sets inputs" % self.name)
        data = np.ascontiguousarray(data)
        if self._shape is not None and list(data.shape) != self._shape:
            if int(np.prod(self._shape)) != data.size:
                raise ValueError("input %r: reshaped to %s, given %d values" % (self.name, self._shape, data.size))
            data = data.reshape(self._shape)
        self._predictor._inputs[self.name] = data.copy()

    def copy_to_cpu(self):
        values = self._predictor._inputs if self._is_input else self._predictor._outputs
        if self.name not in values:
            raise RuntimeError("%s %r holds nothing yet%s" % ("input" if self._is_input else "output", self.name,
                                                               "" if self._is_input else " (call run first)"))
        return np.array(values[self.name])

    def shape(self):
        values = self._predictor._inputs if self._is_input else self._predictor._outputs
        if self.name in values:
            return list(values[self.name].shape)
        return list(self._shape or [])

    def lod(self):
        return []

    def type(self):
        values = self._predictor._inputs if self._is_input else self._predictor._outputs
        return values[self.name].dtype if self.name in values else None


class Predictor(object):
    """A loaded model: set its inputs, run, read its outputs."""

    def __init__(self, config):
        place = core.CUDAPlace(config.gpu_device_id()) if config.use_gpu() else core.CPUPlace()
        self._scope = core.Scope()
        self._exe = executor.Executor(place)
        self._program, self._feed_names, self._fetch_vars = config._load(self._scope, self._exe)
        self._inputs, self._outputs = {}, {}

    def get_input_names(self):
        return list(self._feed_names)

    def get_output_names(self):
        return [v.name for v in self._fetch_vars]

    def get_input_handle(self, name):
        if name not in self._feed_names:
            raise ValueError("%r is not an input of the model (inputs: %s)" % (name, ", ".join(self._feed_names)))
        return Tensor(name, self, True)

    def get_output_handle(self, name):
        if name not in self.get_output_names():
            raise ValueError("%r is not an output of the model (outputs: %s)" %
                             (name, ", ".join(self.get_output_names())))
        return Tensor(name, self, False)

    def run(self):
        missing = [n for n in self._feed_names if n not in self._inputs]
        if missing:
            raise RuntimeError("input(s) %s not set (get_input_handle(name).copy_from_cpu(array))" % ", ".join(missing))
        values = self._exe.run(self._program, feed=dict(self._inputs), fetch_list=self._fetch_vars,
                               scope=self._scope)
        self._outputs = dict(zip(self.get_output_names(), values))
        return True


def create_predictor(config):
    return Predictor(config)
