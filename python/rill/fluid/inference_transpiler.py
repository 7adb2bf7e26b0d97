"""fluid.InferenceTranspiler: an inference program rewritten to compute the same with fewer
ops, as Fluid 0.14's.

transpile(program, place, scope) folds each batch_norm of an inference program (is_test)
into the conv2d before it: when a conv2d's output (or that output plus a per-channel bias,
elementwise_add along axis 1) feeds only a batch_norm, the filter is scaled per output
channel by Scale / sqrt(Variance + epsilon), the bias becomes
(bias - Mean) * that factor + Bias, and the batch_norm becomes an elementwise_add of that
bias. The folded filter and bias are new persistable variables, written into `scope` (the
global scope by default) from the values there: the original program and its parameters
keep working. A batch_norm the rule does not fit is left as it is.
"""
import numpy as np

from rill.fluid import executor, unique_name

__all__ = ["InferenceTranspiler"]


class InferenceTranspiler(object):
    def transpile(self, program, place, scope=None):
        scope = executor.global_scope() if scope is None else scope
        block = program.global_block()
        i = 0
        while i < len(block.ops):
            op = block.ops[i]
            if op.type == "batch_norm" and self._fold(block, i, scope, place):
                continue  # the batch_norm at i is gone; look at what is there now
            i += 1

    @staticmethod
    def _sole_producer(block, name, before):
        """The one op before `before` that writes `name`, when it is also read by one op
        only (folding may then rewrite it); else None."""
        writers = [op for op in block.ops[:before] if name in op.output_arg_names]
        readers = [op for op in block.ops if name in op.input_arg_names]
        return writers[0] if len(writers) == 1 and len(readers) == 1 else None

    def _fold(self, block, bn_index, scope, place):
        bn = block.ops[bn_index]
        if not (bn.has_attr("is_test") and bn.attr("is_test")):
            return False  # a training batch_norm normalizes by the batch's statistics
        x = bn.input("X")[0]
        conv, bias_add = self._sole_producer(block, x, bn_index), None
        if conv is not None and conv.type == "elementwise_add" and conv.attr("axis") == 1:
            bias_add = conv
            conv = self._sole_producer(block, bias_add.input("X")[0], bn_index)
        if conv is None or conv.type not in ("conv2d", "depthwise_conv2d"):
            return False
        if conv.has_attr("data_format") and conv.attr("data_format") == "NHWC":
            return False  # the folded bias is added along axis 1

        def value(name):
            var = scope.find_var(name)
            if var is None:
                raise ValueError("InferenceTranspiler: %s is not in the scope; run the startup program or load the "
                                 "parameters first" % name)
            return np.array(var.get_tensor())

        filt = value(conv.input("Filter")[0])
        eps = bn.attr("epsilon") if bn.has_attr("epsilon") else 1e-5
        factor = value(bn.input("Scale")[0]) / np.sqrt(value(bn.input("Variance")[0]) + eps)
        bias = value(bias_add.input("Y")[0]).reshape(-1) if bias_add is not None else np.zeros_like(factor)
        new_bias = (bias - value(bn.input("Mean")[0])) * factor + value(bn.input("Bias")[0])
        new_filter = filt * factor.reshape((-1,) + (1,) * (filt.ndim - 1)).astype(filt.dtype)

        def persistable(prefix, array):
            name = unique_name.generate(prefix)
            block.create_var(name=name, shape=list(array.shape), dtype=str(array.dtype), persistable=True)
            scope.var(name).get_tensor().set(np.ascontiguousarray(array), place)
            return name

        filter_name = persistable(conv.input("Filter")[0] + "@bn_folded", new_filter)
        bias_name = persistable(bn.input("Bias")[0] + "@bn_folded", new_bias.astype(filt.dtype))
        conv._rename_input(conv.input("Filter")[0], filter_name)
        out = bn.output("Y")[0]
        block.remove_op(bn_index)
        if bias_add is not None:
            # the conv's own bias is in the folded one: its add becomes the batch_norm's
            bias_add._rename_input(bias_add.input("Y")[0], bias_name)
            bias_add._rename_output(bias_add.output("Out")[0], out)
        else:
            block.insert_op(bn_index, type="elementwise_add", inputs={"X": [x], "Y": [bias_name]},
                            outputs={"Out": [out]}, attrs={"axis": 1})
        return True
