"""paddle.fluid.core in the stand-in: rill.fluid.core, and the build queries Paddle's tests
make. Paddle's tests read is_compiled_with_cuda as "a GPU is here to test on": it is true
where Rill drives CUDA and a device is present."""
import unittest

from rill.fluid.core import *  # noqa: F401,F403
import rill.fluid.core as _rill_core


def is_compiled_with_cuda():
    return _rill_core.is_compiled_with_cuda() and _rill_core.get_cuda_device_count() > 0


class CUDAPlace(_rill_core.CUDAPlace):
    """A test that makes one means to run on a GPU: with none here, it skips."""

    def __init__(self, device_id=0):
        if not is_compiled_with_cuda():
            raise unittest.SkipTest("GPU: the test runs on CUDAPlace(%d); no CUDA device here" % device_id)
        super(CUDAPlace, self).__init__(device_id)


def is_compiled_with_xpu():
    return False


def is_compiled_with_npu():
    return False


def is_compiled_with_rocm():
    return False


def is_compiled_with_mkldnn():
    return False


def op_support_gpu(op_type):
    return is_compiled_with_cuda()


def is_float16_supported(place):
    return False


def supports_bfloat16():
    return False


def get_grad_op_desc(op_desc, no_grad_set, sub_blocks):
    import importlib
    return importlib.import_module("paddle.fluid.desc_api").get_grad_op_desc(op_desc, no_grad_set, sub_blocks)


def __getattr__(attr):
    if attr.startswith("__"):
        raise AttributeError(attr)
    if hasattr(_rill_core, attr):
        return getattr(_rill_core, attr)
    from paddle import Unsupported
    return Unsupported("paddle.fluid.core." + attr)
