"""fluid.initializer: ops in the startup program that give parameters their first values.

Each initializer, called with a variable and a block, prepends one op to that block (as
Fluid's do): fill_constant, uniform_random, gaussian_random or assign_value. A seed of 0 takes the
program's random_seed, or when that is 0 too, the next seed of paddle.seed's generator if one is set.
"""
import math
import random

import numpy as np

__all__ = ["Constant", "Uniform", "Normal", "Xavier", "MSRA", "Bilinear", "ConstantInitializer", "UniformInitializer",
           "NormalInitializer", "XavierInitializer", "MSRAInitializer", "BilinearInitializer", "NumpyArrayInitializer"]


# paddle.seed's generator of seeds (set_global_seed), or None: Paddle's global generator,
# which makes the random initializers of seed 0 built after it repeat, and differ from each other.
_global_seeds = [None]


def set_global_seed(value):
    """Random initializers of seed 0 in a program of random_seed 0 take their seeds from a
    generator seeded with `value`, in the order they are built (paddle.seed)."""
    _global_seeds[0] = random.Random(int(value))


class Initializer(object):
    def __call__(self, param, block):
        raise NotImplementedError()

    @staticmethod
    def _compute_fans(var):
        shape = var.shape
        if not shape or len(shape) == 0:
            return 1, 1
        if len(shape) == 1:
            return shape[0], shape[0]
        if len(shape) == 2:
            return shape[0], shape[1]
        receptive = int(np.prod(shape[2:]))
        return shape[1] * receptive, shape[0] * receptive

    @staticmethod
    def _seed(seed, block):
        """The op's seed: its own, else the program's random_seed, else the next draw of the
        global seed's generator (paddle.seed) when one is set, else 0 (the OS's, each run)."""
        seed = seed or block.program.random_seed
        if seed == 0 and _global_seeds[0] is not None:
            seed = _global_seeds[0].randint(1, 2 ** 31 - 1)
        return seed


class ConstantInitializer(Initializer):
    def __init__(self, value=0.0, force_cpu=False):
        self._value = value
        self._force_cpu = force_cpu

    def __call__(self, var, block):
        return block.prepend_op(type="fill_constant", outputs={"Out": var}, attrs={
            "shape": list(var.shape), "dtype": int(var.dtype), "value": float(self._value),
            "force_cpu": self._force_cpu})


class UniformInitializer(Initializer):
    """Values drawn uniformly from [low, high); diag_num > 0 then sets that many elements,
    diag_step apart (counting those skipped), from the first, to diag_val (Fluid 2.x's)."""

    def __init__(self, low=-1.0, high=1.0, seed=0, diag_num=0, diag_step=0, diag_val=1.0):
        if low >= high:
            raise ValueError("UniformInitializer needs low < high, got %s and %s" % (low, high))
        if diag_num < 0 or diag_step < 0:
            raise ValueError("UniformInitializer: diag_num and diag_step must be at least 0, got %s and %s"
                             % (diag_num, diag_step))
        self._low, self._high, self._seed_value = low, high, seed
        self._diag = (int(diag_num), int(diag_step), float(diag_val))

    def __call__(self, var, block):
        attrs = {"shape": list(var.shape), "dtype": int(var.dtype), "min": float(self._low),
                 "max": float(self._high), "seed": self._seed(self._seed_value, block)}
        if self._diag[0] > 0:  # written only when used: a program without one stays Fluid 0.14's
            attrs.update(diag_num=self._diag[0], diag_step=self._diag[1], diag_val=self._diag[2])
        return block.prepend_op(type="uniform_random", outputs={"Out": var}, attrs=attrs)


class NormalInitializer(Initializer):
    def __init__(self, loc=0.0, scale=1.0, seed=0):
        self._mean, self._std, self._seed_value = loc, scale, seed

    def __call__(self, var, block):
        return block.prepend_op(type="gaussian_random", outputs={"Out": var}, attrs={
            "shape": list(var.shape), "dtype": int(var.dtype), "mean": float(self._mean), "std": float(self._std),
            "seed": self._seed(self._seed_value, block)})


class XavierInitializer(Initializer):
    def __init__(self, uniform=True, fan_in=None, fan_out=None, seed=0):
        self._uniform, self._fan_in, self._fan_out, self._seed_value = uniform, fan_in, fan_out, seed

    def __call__(self, var, block):
        f_in, f_out = self._compute_fans(var)
        fan_in = f_in if self._fan_in is None else self._fan_in
        fan_out = f_out if self._fan_out is None else self._fan_out
        if self._uniform:
            limit = math.sqrt(6.0 / float(fan_in + fan_out))
            return UniformInitializer(-limit, limit, self._seed_value)(var, block)
        return NormalInitializer(0.0, math.sqrt(2.0 / float(fan_in + fan_out)), self._seed_value)(var, block)


class MSRAInitializer(Initializer):
    def __init__(self, uniform=True, fan_in=None, seed=0):
        self._uniform, self._fan_in, self._seed_value = uniform, fan_in, seed

    def __call__(self, var, block):
        f_in, _ = self._compute_fans(var)
        fan_in = f_in if self._fan_in is None else self._fan_in
        if self._uniform:
            limit = math.sqrt(6.0 / float(fan_in))
            return UniformInitializer(-limit, limit, self._seed_value)(var, block)
        return NormalInitializer(0.0, math.sqrt(2.0 / float(fan_in)), self._seed_value)(var, block)


class NumpyArrayInitializer(Initializer):
    """The values of a numpy array (float32, int32 or int64), kept in the program (an
    assign_value op). An array of the parameter's size takes the parameter's shape, as Fluid
    1.x's (whose tests give a bias [n, 1] an array [n]); one of another size keeps its own,
    which the parameter then has when run, as in Paddle (whose assign_value takes the array's
    shape: its hsigmoid tests give a weight of 8 declared rows an array of 7)."""

    def __init__(self, value):
        if not isinstance(value, np.ndarray):
            raise TypeError("NumpyArrayInitializer takes a numpy array, got %s" % type(value).__name__)
        self._value = value

    def __call__(self, var, block):
        from rill.fluid.framework import dtype_to_np
        value = self._value.astype(dtype_to_np(var.dtype))
        if value.size == int(np.prod(var.shape)) and all(d >= 0 for d in var.shape):
            value = value.reshape(var.shape)
        attr = {np.dtype(np.float32): "fp32_values", np.dtype(np.int32): "int32_values",
                np.dtype(np.int64): "int64_values"}.get(value.dtype)
        if attr is None:
            raise TypeError("NumpyArrayInitializer: %s is %s; assign_value holds float32, int32 or int64"
                            % (var.name, value.dtype))
        if value.size > 1024 * 1024:
            raise ValueError("NumpyArrayInitializer: %d values are too many to keep in the program" % value.size)
        values = [float(v) for v in value.flat] if attr == "fp32_values" else [int(v) for v in value.flat]
        return block.prepend_op(type="assign_value", outputs={"Out": var}, attrs={
            "shape": list(value.shape), "dtype": int(var.dtype), attr: values})


Constant = ConstantInitializer
Uniform = UniformInitializer
Normal = NormalInitializer
Xavier = XavierInitializer
MSRA = MSRAInitializer


class BilinearInitializer(Initializer):
    """A [C, 1, K, K] (or [C_out, C_in, K, K]) filter that upsamples by bilinear interpolation
    when a conv2d_transpose of stride about K / 2 applies it: every K x K kernel is the same
    tent, (1 - |x / f - c|) (1 - |y / f - c|) with f = ceil(K / 2), c = (2f - 1 - f mod 2) / 2f."""

    def __call__(self, var, block):
        shape = list(var.shape)
        if len(shape) != 4:
            raise ValueError("the length of shape must be 4.")
        if shape[2] != shape[3]:
            raise ValueError("shape[2] must be equal to shape[3].")
        size = shape[3]
        f = np.ceil(size / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        ramp = 1 - np.abs(np.arange(size) / f - c)
        kernel = np.outer(ramp, ramp).astype(np.float32)
        return NumpyArrayInitializer(np.broadcast_to(kernel, shape).copy())(var, block)
Bilinear = BilinearInitializer
