"""OpTest for Paddle's op unit tests, on Rill: our implementation of the contract Paddle
2.1's op_test.py gives its tests (a test sets op_type, inputs, outputs and attrs, then calls
check_output and check_grad).

check_output builds a program of the one op through rill.fluid, feeds the inputs, runs it
on Rill's runtime and compares each expected output by Paddle's rule, np.allclose(actual,
expect, atol) with atol 0 for fp64 unless Paddle's white list relaxes the op. check_grad
compares the gradient Rill's backward pass computes for loss = mean of the outputs (their
means' average for several; a given output gradient when the test supplies one) with the
numeric gradient, central differences of that loss, by Paddle's relative-error rule and
thresholds (fp64: delta 1e-5, error 1e-7, and the small-value scaling), again with Paddle's
white lists, read from the Paddle checkout the tests come from.

Inputs given with a LoD, `(array, lengths)`, are fed as LoD tensors; an expected output
given with one must come out with that LoD (Paddle's rule: the lengths compared).

What Rill does not run is skipped with a reason the runner tallies: fp16 (Paddle runs it
only on a GPU), bf16, complex, a CUDA or other device place.
Paddle's CI policies that are not about the op's behaviour (every test must check fp64
gradients, inputs of at least 100 elements) are not enforced.
"""
import random
import unittest

import numpy as np

import paddle
import rill
from paddle.fluid import core
from rill import fluid
from rill.fluid.backward import append_backward

try:  # Paddle's white lists, beside its op_test.py in the checkout the tests come from
    from white_list import op_threshold_white_list, no_grad_set_white_list  # noqa: F401
    _FP64_OUTPUT_RELAXED = set(op_threshold_white_list.NEED_FIX_FP64_CHECK_OUTPUT_THRESHOLD_OP_LIST)
    _FP64_GRAD_RELAXED = set(op_threshold_white_list.NEED_FIX_FP64_CHECK_GRAD_THRESHOLD_OP_LIST)
except ImportError:
    _FP64_OUTPUT_RELAXED, _FP64_GRAD_RELAXED = set(), set()

# Outputs Paddle declares intermediate (always made, even when a test does not check
# them) that Rill's schemas mark optional: Paddle's OpTest gives the op a variable for each.
_INTERMEDIATE_OUTPUTS = ("XShape", "Mask", "Index")

# Paddle's order for the precision a test runs at: the first of these its inputs have.
_DTYPE_ORDER = [np.float64, np.float32, np.float16, np.int64, np.int32, np.uint16, np.int16, np.int8, np.uint8,
                np.bool_]


def _set_use_system_allocator(value=None):
    """Paddle's allocator switch: Rill has one allocator, so nothing to switch."""
    return value


def skip_check_grad_ci(reason=None):
    """Paddle's decorator for tests exempt from its check_grad policy."""
    if not isinstance(reason, str):
        raise AssertionError("The reason for skipping check_grad is required.")

    def wrapper(cls):
        cls.no_need_check_grad = True
        return cls
    return wrapper


def check_out_dtype(api_fn, in_specs, expect_dtypes, target_index=0, **configs):
    """Paddle's check that `api_fn` gives each of `expect_dtypes`: for each, a program of one
    call on inputs of in_specs ([(shape, dtype)], or [(shape,)] for the input at
    target_index, which takes the expected dtype, the others float32); a ValueError naming
    the dtype it gave otherwise."""
    import paddle
    from rill.fluid.layers.checks import numpy_name
    for expect in expect_dtypes:
        with paddle.static.program_guard(paddle.static.Program()):
            inputs = []
            for index, spec in enumerate(in_specs):
                if len(spec) not in (1, 2):
                    raise ValueError("in_specs[%d] should be (shape,) or (shape, dtype)" % index)
                dtype = spec[1] if len(spec) == 2 else expect if index == target_index else "float32"
                inputs.append(paddle.static.data(name="data_%d" % index, shape=spec[0], dtype=dtype))
            got = numpy_name(api_fn(*inputs, **configs).dtype)
            if got != expect:
                raise ValueError("Expected out.dtype is %s, but got %s from %s." % (expect, got, api_fn.__name__))


def randomize_probability(batch_size, class_num, dtype='float32'):
    prob = np.random.uniform(0.1, 1.0, size=(batch_size, class_num)).astype(dtype)
    return prob / prob.sum(axis=1, keepdims=True)


def convert_float_to_uint16(float_list, data_format="NCHW"):
    raise unittest.SkipTest("bf16: Rill has no bfloat16 kernels")


def _array_of(value):
    """A slot value's array: `array`, or `(array, lod)`."""
    return value[0] if isinstance(value, tuple) else value


def _lod_of(value):
    """A slot value's LoD as lengths, or None."""
    if isinstance(value, tuple) and len(value) > 1 and value[1] is not None and len(value[1]) > 0:
        return value[1]
    return None


def _entries(slot, value):
    """(variable name, value) of a slot: a list of (name, value) for a duplicable one."""
    if isinstance(value, list):
        return [(name, v) for name, v in value]
    return [(slot, value)]


def _plain_attr(value):
    """An attribute value as rill.fluid takes it: numpy scalars and arrays as Python values."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain_attr(v) for v in value]
    return value


def _central_differences(x, run, outputs, delta):
    """d(loss)/dx by central differences, one element of array `x` at a time in its dtype,
    where loss is the mean of the `outputs` arrays run(value of x) returns (their means'
    average), as Paddle's get_numeric_gradient computes it."""
    dtype = x.dtype.type
    if x.dtype not in (np.float32, np.float64):
        raise ValueError("Not supported data type " + str(x.dtype))
    flat = x.reshape(-1).copy()

    def loss():
        outs = run(flat.reshape(x.shape))
        return dtype(np.array([np.array(o).astype(dtype).mean() for o in outs]).sum() / outputs)

    grad = np.zeros(flat.size, dtype)
    for i in range(flat.size):
        origin = flat[i]
        flat[i] = dtype(origin + delta)
        y_pos = loss()
        flat[i] = dtype(origin - delta)
        y_neg = loss()
        flat[i] = origin
        grad[i] = (y_pos - y_neg) / delta / 2
    return grad.reshape(x.shape)


def _set_inputs(scope, inputs, place):
    """Each of a test's inputs (slot -> value, or a list of (name, value)) into `scope`."""
    for slot, value in inputs.items():
        for name, v in _entries(slot, value):
            tensor = scope.var(name).get_tensor()
            tensor.set(_array_of(v), place)
            if _lod_of(v) is not None:
                tensor.set_recursive_sequence_lengths(_lod_of(v))


def get_numeric_gradient(place, scope, op, inputs, input_to_check, output_names, delta=0.005, in_place=False):
    """Paddle's module-level form: the numeric gradient of op's outputs `output_names` (their
    means' average) with respect to input `input_to_check`, running `op` (a fluid Operator)
    in `scope` on the test's `inputs` for each perturbation; `in_place` (the op overwrites
    an input) sets the inputs again before each run."""
    if isinstance(output_names, str):
        output_names = [output_names]
    _set_inputs(scope, inputs, place)
    tensor = scope.find_var(input_to_check).get_tensor()
    x = np.array(tensor)

    def run(value):
        if in_place:
            _set_inputs(scope, inputs, place)
        tensor.set(value, place)
        op.run(scope, place)
        return [np.array(scope.find_var(name).get_tensor()) for name in output_names]

    grad = _central_differences(x, run, len(output_names), delta)
    tensor.set(x, place)
    return grad


class OpTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls._np_rand_state = np.random.get_state()
        cls._py_rand_state = random.getstate()
        cls.call_once = False
        cls.dtype = None
        cls.outputs = {}
        np.random.seed(123)
        random.seed(124)

    @classmethod
    def tearDownClass(cls):
        np.random.set_state(cls._np_rand_state)
        random.setstate(cls._py_rand_state)

    @staticmethod
    def np_dtype_to_fluid_dtype(input):
        return input

    @staticmethod
    def np_value_to_fluid_value(input):
        return input

    @staticmethod
    def fluid_dtype_to_np_dtype(self, dtype):
        return dtype

    def try_call_once(self, data_type):
        if not self.call_once:
            self.call_once = True
            self.dtype = data_type

    def is_bfloat16_op(self):
        return self.dtype == np.uint16 or getattr(self, "mkldnn_data_type", None) == "bfloat16"

    def infer_dtype_from_inputs_outputs(self, inputs, outputs):
        found = set()
        for values in (inputs, outputs):
            for slot, value in (values or {}).items():
                for _, v in _entries(slot, value):
                    v = _array_of(v)
                    if isinstance(v, (np.ndarray, np.generic)):
                        found.add(np.dtype(v.dtype))
            if found:
                break
        for dtype in _DTYPE_ORDER:
            if np.dtype(dtype) in found:
                self.dtype = np.dtype(dtype)
                break
        self.__class__.dtype = self.dtype

    # What Rill does not run.
    # The sequence op tests' shared inputs (Paddle's OpTest offers them): random [0.1, 1)
    # float32 rows under a length-based LoD, one sequence (batch size 1), or one with empty
    # sequences at both ends and in the middle, one alone and several in a row.
    def get_sequence_batch_size_1_input(self, lod=None, shape=None):
        lod = lod or [[13]]
        shape = shape or [13, 23]
        assert len(lod[0]) == 1 and lod[0][0] == shape[0]
        return np.random.uniform(0.1, 1, shape).astype("float32"), lod

    def get_sequence_instance_size_0_input(self, lod=None, shape=None):
        lod = lod or [[0, 0, 4, 0, 3, 0, 0, 5, 0, 0]]
        shape = shape or [12, 10]
        lengths = lod[0]
        assert len(lengths) >= 8 and lengths[:2] == [0, 0] and lengths[-2:] == [0, 0] and sum(lengths) == shape[0]
        return np.random.uniform(0.1, 1, shape).astype("float32"), lod

    def _skip_unsupported(self, place):
        if place is not None and not isinstance(place, core.CPUPlace):
            raise unittest.SkipTest("GPU: %s" % type(place).__name__)
        if self.dtype == np.float16:
            raise unittest.SkipTest("fp16: Paddle runs fp16 op tests on a GPU only")
        if self.is_bfloat16_op():
            raise unittest.SkipTest("bf16: Rill has no bfloat16 kernels")
        for values in (self.inputs, getattr(self, "outputs", {})):
            for slot, value in values.items():
                for _, v in _entries(slot, value):
                    if np.iscomplexobj(_array_of(v)):
                        raise unittest.SkipTest("complex: Rill has no complex kernels")

    def _schema(self):
        schema = rill._rill.op_schema(self.op_type)
        if schema is None:
            raise AssertionError("op %s: %s" % (self.op_type, rill._rill.unknown_op_message(self.op_type)))
        return schema

    def _build(self, block, grad_inputs=()):
        """Appends the op to `block` with a variable per input and output; returns
        (op, {input var: array}, {output slot: [var names]})."""
        schema = self._schema()
        feeds, inputs = {}, {}
        self._feed_lods = {}
        for slot, value in self.inputs.items():
            names = []
            for name, v in _entries(slot, value):
                if v is None:
                    continue
                array = np.asarray(_array_of(v))
                block.create_var(name=name, shape=array.shape, dtype=array.dtype,
                                 stop_gradient=name not in grad_inputs)
                feeds[name] = array
                if _lod_of(v) is not None:
                    self._feed_lods[name] = _lod_of(v)
                names.append(name)
            inputs[slot] = names
        outputs = {}
        for spec in schema["outputs"]:
            slot = spec["name"]
            if slot in self.outputs:
                outputs[slot] = [name for name, _ in _entries(slot, self.outputs[slot])]
            elif not spec["optional"] or slot in _INTERMEDIATE_OUTPUTS:
                outputs[slot] = [slot]
        for slot, value in self.outputs.items():
            if slot not in outputs:
                outputs[slot] = [name for name, _ in _entries(slot, value)]
        for slot, names in outputs.items():
            for name in names:
                block.create_var(name=name, stop_gradient=False)
        attrs = {k: _plain_attr(v) for k, v in getattr(self, "attrs", {}).items() if v is not None}
        op = block.append_op(type=self.op_type, inputs=inputs, outputs=outputs, attrs=attrs)
        return op, feeds, outputs

    def _run(self, program, feeds, fetch, scope=None):
        """The fetched values as Rill's tensors (np.array reads one; its LoD is kept)."""
        values = {}
        for name, array in feeds.items():
            lod = self._feed_lods.get(name)
            if lod is None:
                values[name] = array
                continue
            tensor = core.LoDTensor()
            tensor.set(array, fluid.CPUPlace())
            tensor.set_recursive_sequence_lengths(lod)
            values[name] = tensor
        exe = fluid.Executor(fluid.CPUPlace())
        return exe.run(program, feed=values, fetch_list=fetch, scope=scope or core.Scope(), return_numpy=False)

    def _calc_output(self, place, parallel=False, no_check_set=None):
        """(the outputs, their names). parallel: Paddle runs the program data-parallel over
        its places; with the one CPU place that computes the same, so it runs as it is."""
        program = fluid.Program()
        op, feeds, outputs = self._build(program.global_block())
        fetch = list(getattr(self, "fetch_list", []))
        if not fetch:
            for slot, value in self.outputs.items():
                if no_check_set is not None and slot in no_check_set:
                    continue
                fetch += [name for name, _ in _entries(slot, value)]
        self.op, self.program = op, program
        return self._run(program, feeds, fetch), fetch

    def calc_output(self, place):
        return [np.array(out) for out in self._calc_output(place)[0]]

    def _skip_preset_fp16(self):
        """Paddle picks the places from the dtype the test set before inferring it: a test
        declared fp16 runs on a GPU only, whatever its inputs are."""
        if getattr(self, "dtype", None) == np.float16:
            raise unittest.SkipTest("fp16: Paddle runs fp16 op tests on a GPU only")

    def check_output(self, atol=1e-5, no_check_set=None, equal_nan=False, check_dygraph=True, inplace_atol=None):
        self.__class__.op_type = self.op_type
        self._skip_preset_fp16()
        return self.check_output_with_place(fluid.CPUPlace(), atol, no_check_set, equal_nan, check_dygraph)

    def check_output_with_place(self, place, atol=0, no_check_set=None, equal_nan=False, check_dygraph=True,
                                inplace_atol=None):
        self.infer_dtype_from_inputs_outputs(self.inputs, self.outputs)
        self._skip_unsupported(place)
        if self.dtype == np.float64 and self.op_type not in _FP64_OUTPUT_RELAXED:
            atol = 0
        outs, fetch = self._calc_output(place, no_check_set=no_check_set)
        got = dict(zip(fetch, outs))
        for slot, value in self.outputs.items():
            if no_check_set is not None and slot in no_check_set:
                continue
            for name, expect in _entries(slot, value):
                actual = np.array(got[name])
                expect_array = np.asarray(_array_of(expect))
                if not (actual.size == 0 and expect_array.size == 0):
                    self.assertTrue(np.allclose(actual, expect_array, atol=atol, equal_nan=equal_nan),
                                    "Output (%s) has diff at %s\nExpect %s\nBut Got %s in class %s" %
                                    (name, place, expect_array, actual, self.__class__.__name__))
                if isinstance(expect, tuple):
                    self.assertListEqual([list(l) for l in got[name].recursive_sequence_lengths()],
                                         [list(l) for l in expect[1]],
                                         "Output (%s) has different lod at %s" % (name, place))
        outs = [np.array(o) for o in outs]
        return (outs, fetch, fetch) if check_dygraph else (outs, fetch)

    def check_output_customized(self, checker):
        self.infer_dtype_from_inputs_outputs(self.inputs, self.outputs)
        self._skip_unsupported(None)
        outs = [np.array(out) for out in self.calc_output(fluid.CPUPlace())]
        outs.sort(key=len)
        checker(outs)

    def _assert_is_close(self, numeric_grads, analytic_grads, names, max_relative_error, msg_prefix):
        for a, b, name in zip(numeric_grads, analytic_grads, names):
            a = np.asarray(a)
            b = np.asarray(b)
            self.assertEqual(a.shape, b.shape, "%s: gradient of %s is %s, want %s" % (msg_prefix, name, b.shape,
                                                                                      a.shape))
            abs_a = np.abs(a).astype(np.float64)
            if self.dtype == np.float64 and self.op_type not in _FP64_GRAD_RELAXED:
                abs_a[abs_a < 1e-10] = 1e-3
                abs_a[np.logical_and(abs_a > 1e-10, abs_a <= 1e-8)] *= 1e4
                abs_a[np.logical_and(abs_a > 1e-8, abs_a <= 1e-6)] *= 1e2
            else:
                abs_a[abs_a < 1e-3] = 1
            diff = np.abs(a - b) / abs_a
            max_diff = np.max(diff) if diff.size else 0.0
            if not max_diff <= max_relative_error:
                k = int(np.argmax(diff > max_relative_error))
                self.fail("Operator %s error, %s variable %s (shape: %s, dtype: %s) max gradient diff %e over limit "
                          "%e, the first error element is %d, expected %e, but got %e." %
                          (self.op_type, msg_prefix, name, a.shape, self.dtype, max_diff, max_relative_error, k,
                           a.flatten()[k], b.flatten()[k]))

    def check_grad(self, inputs_to_check, output_names, no_grad_set=None, numeric_grad_delta=0.005, in_place=False,
                   max_relative_error=0.005, user_defined_grads=None, user_defined_grad_outputs=None,
                   check_dygraph=True):
        self._skip_preset_fp16()
        self.check_grad_with_place(fluid.CPUPlace(), inputs_to_check, output_names, no_grad_set, numeric_grad_delta,
                                   in_place, max_relative_error, user_defined_grads, user_defined_grad_outputs,
                                   check_dygraph)

    def check_grad_with_place(self, place, inputs_to_check, output_names, no_grad_set=None, numeric_grad_delta=0.005,
                              in_place=False, max_relative_error=0.005, user_defined_grads=None,
                              user_defined_grad_outputs=None, check_dygraph=True):
        self.infer_dtype_from_inputs_outputs(self.inputs, self.outputs)
        self.__class__.op_type = self.op_type
        self._skip_unsupported(place)
        if self.dtype == np.float64 and self.op_type not in _FP64_GRAD_RELAXED:
            numeric_grad_delta, max_relative_error = 1e-5, 1e-7
        if not isinstance(output_names, list):
            output_names = [output_names]
        numeric = user_defined_grads or [self._numeric_gradient(name, output_names, numeric_grad_delta)
                                         for name in inputs_to_check]
        analytic = self._analytic_gradient(inputs_to_check, output_names, no_grad_set, user_defined_grad_outputs)
        self._assert_is_close(numeric, analytic, inputs_to_check, max_relative_error,
                              "Gradient Check On %s" % place)

    @staticmethod
    def _output_vars(outputs, output_names):
        """The variables of `output_names`, each a slot's or one of a duplicable slot's."""
        names = []
        for n in output_names:
            names += outputs.get(n, [n])
        return names

    def _forward_outputs(self, output_names):
        """(program, feeds, var names of `output_names`): the op alone."""
        program = fluid.Program()
        _, feeds, outputs = self._build(program.global_block())
        return program, feeds, self._output_vars(outputs, output_names)

    def _numeric_gradient(self, input_name, output_names, delta):
        """Central differences of the mean of the outputs (their means' average), one element
        of `input_name` at a time, in its dtype, as Paddle's get_numeric_gradient does."""
        program, feeds, names = self._forward_outputs(output_names)
        if input_name not in feeds:
            raise AssertionError("%s is not an input of the test" % input_name)
        x = feeds[input_name]
        scope = core.Scope()

        def loss(value):
            feeds[input_name] = value
            return self._run(program, feeds, names, scope)

        grad = _central_differences(x, loss, len(names), delta)
        feeds[input_name] = x
        return grad

    def _analytic_gradient(self, inputs_to_check, output_names, no_grad_set, grad_outputs):
        """Rill's backward pass of the loss: the outputs' mean (several: their means'
        average), or, given output gradients G, sum(output * G), whose gradient is G pulled
        back through the op."""
        program = fluid.Program()
        block = program.global_block()
        _, feeds, outputs = self._build(block, grad_inputs=set(inputs_to_check))
        names = self._output_vars(outputs, output_names)
        with fluid.program_guard(program):
            if grad_outputs is not None:
                if not isinstance(grad_outputs, list):
                    grad_outputs = [grad_outputs]
                terms = []
                for k, (name, g) in enumerate(zip(names, grad_outputs)):
                    g_name = "grad_output_%d" % k
                    block.create_var(name=g_name, shape=g.shape, dtype=g.dtype, stop_gradient=True)
                    feeds[g_name] = g
                    terms.append(fluid.layers.reduce_sum(fluid.layers.elementwise_mul(block.var(name),
                                                                                     block.var(g_name))))
                loss = terms[0] if len(terms) == 1 else fluid.layers.sums(terms)
            else:
                means = [fluid.layers.mean(block.var(n)) for n in names]
                loss = means[0] if len(means) == 1 else fluid.layers.scale(fluid.layers.sums(means),
                                                                            scale=1.0 / len(means))
        pairs = append_backward(loss, parameter_list=list(inputs_to_check), no_grad_set=no_grad_set)
        grads = dict((p.name, g.name) for p, g in pairs)
        missing = [n for n in inputs_to_check if n not in grads]
        if missing:
            raise AssertionError("%s: Rill's backward pass gives no gradient for %s" % (self.op_type, missing))
        outs = self._run(program, feeds, [grads[n] for n in inputs_to_check])
        return [np.array(o) for o in outs]
