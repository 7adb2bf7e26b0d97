"""fluid.layers nce and hsigmoid: losses for classifiers over a large vocabulary
(word2vec's variants) that avoid normalizing over every class: noise-contrastive
estimation scores each example's true classes against a few classes drawn from a noise
distribution; the hierarchical sigmoid makes the classes the leaves of a binary tree and
scores the log(classes) branches on the way to each."""
import numpy as np

from rill.fluid.layer_helper import LayerHelper
from rill.fluid.layers.checks import check_variable_and_dtype
from rill.fluid.layers.tensor import assign

__all__ = ["nce", "hsigmoid"]

_SAMPLERS = {"uniform": 0, "log_uniform": 1, "custom_dist": 2}


def _alias_table(probs):
    """Walker's alias table of `probs` (Vose's construction): (alias int32, alias_probs fp32);
    bucket k keeps class k with probability alias_probs[k], else gives alias[k] (-1: none)."""
    n = len(probs)
    scaled = np.asarray(probs, dtype=np.float64) * n
    alias = np.full(n, -1, dtype=np.int32)
    keep = np.ones(n, dtype=np.float32)
    small = [k for k in range(n) if scaled[k] < 1.0]
    large = [k for k in range(n) if scaled[k] >= 1.0]
    while small and large:
        s, big = small.pop(), large.pop()
        keep[s] = scaled[s]
        alias[s] = big
        scaled[big] -= 1.0 - scaled[s]
        (small if scaled[big] < 1.0 else large).append(big)
    return alias, keep


def nce(input, label, num_total_classes, sample_weight=None, param_attr=None, bias_attr=None,
        num_neg_samples=None, name=None, sampler="uniform", custom_dist=None, seed=0, is_sparse=False):
    """The NCE loss of each row of `input` ([N, D]) for its int64 `label` classes ([N,
    num_true]) against num_neg_samples (default 10) noise classes drawn by `sampler`
    ("uniform", "log_uniform", or "custom_dist" with the probabilities `custom_dist`),
    divided by num_neg_samples + 1 as Fluid returns it: [N, 1]. Creates the weight
    [num_total_classes, D] and the bias [num_total_classes, 1]."""
    check_variable_and_dtype(input, "input", ["float32", "float64"], "nce")
    check_variable_and_dtype(label, "label", ["int64"], "nce")
    if sampler not in _SAMPLERS:
        raise ValueError("nce: sampler must be one of %s, got %r" % (sorted(_SAMPLERS), sampler))
    helper = LayerHelper("nce", param_attr=param_attr, bias_attr=bias_attr, name=name)
    dim = int(input.shape[1])
    w = helper.create_parameter(attr=helper.param_attr, shape=[num_total_classes, dim], dtype=input.dtype)
    inputs = {"Input": [input], "Label": [label], "Weight": [w]}
    if helper.bias_attr:
        inputs["Bias"] = [helper.create_parameter(attr=helper.bias_attr, shape=[num_total_classes, 1],
                                                  dtype=input.dtype, is_bias=True)]
    if sample_weight is not None:
        inputs["SampleWeight"] = [sample_weight]
    if sampler == "custom_dist":
        if custom_dist is None or len(custom_dist) != num_total_classes:
            raise ValueError("nce: the custom_dist sampler takes num_total_classes (%d) probabilities" %
                             num_total_classes)
        alias, keep = _alias_table(custom_dist)
        inputs.update({"CustomDistProbs": [assign(np.asarray(custom_dist, dtype=np.float32))],
                       "CustomDistAlias": [assign(alias)], "CustomDistAliasProbs": [assign(keep)]})
    num_neg_samples = 10 if num_neg_samples is None else int(num_neg_samples)
    cost = helper.create_tmp_variable(dtype=input.dtype)
    cost._shape = [-1, 1]
    logits = helper.create_tmp_variable(dtype=input.dtype, stop_gradient=True)
    samples = helper.create_tmp_variable(dtype="int64", stop_gradient=True)
    helper.append_op(type="nce", inputs=inputs,
                     outputs={"Cost": [cost], "SampleLogits": [logits], "SampleLabels": [samples]},
                     attrs={"num_total_classes": int(num_total_classes), "num_neg_samples": num_neg_samples,
                            "sampler": _SAMPLERS[sampler], "seed": seed, "is_sparse": is_sparse})
    return cost / (num_neg_samples + 1)


def hsigmoid(input, label, num_classes, param_attr=None, bias_attr=None, name=None, path_table=None,
             path_code=None, is_custom=False, is_sparse=False):
    """The hierarchical-sigmoid loss ([N, 1]) of each row of `input` ([N, D]) for its int64
    `label` class: over the complete binary tree of num_classes leaves (a weight [num_classes
    - 1, D] and bias [num_classes - 1, 1], a row per inner node), or with is_custom over the
    tree each example's path_table (nodes, ending at -1) and path_code (branches) give (a
    weight of num_classes rows: the inner nodes)."""
    check_variable_and_dtype(input, "input", ["float32", "float64"], "hsigmoid")
    check_variable_and_dtype(label, "label", ["int64"], "hsigmoid")
    if is_custom != (path_table is not None) or (path_table is None) != (path_code is None):
        raise ValueError("hsigmoid: is_custom takes path_table and path_code; the default tree takes neither")
    if not is_custom and num_classes < 2:
        raise ValueError("hsigmoid: num_classes must be at least 2, got %d" % num_classes)
    helper = LayerHelper("hierarchical_sigmoid", param_attr=param_attr, bias_attr=bias_attr, name=name)
    nodes = num_classes if is_custom else num_classes - 1
    w = helper.create_parameter(attr=helper.param_attr, shape=[nodes, int(input.shape[1])], dtype=input.dtype)
    inputs = {"X": [input], "W": [w], "Label": [label]}
    if helper.bias_attr:
        inputs["Bias"] = [helper.create_parameter(attr=helper.bias_attr, shape=[nodes, 1], dtype=input.dtype,
                                                  is_bias=True)]
    if is_custom:
        inputs.update({"PathTable": [path_table], "PathCode": [path_code]})
    out = helper.create_tmp_variable(dtype=input.dtype)
    out._shape = [-1, 1]
    pre_out = helper.create_tmp_variable(dtype=input.dtype, stop_gradient=True)
    helper.append_op(type="hierarchical_sigmoid", inputs=inputs, outputs={"Out": [out], "PreOut": [pre_out]},
                     attrs={"num_classes": int(num_classes), "is_sparse": is_sparse})
    return out
