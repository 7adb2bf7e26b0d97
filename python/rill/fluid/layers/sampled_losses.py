"""fluid.layers.nce: noise-contrastive estimation, a loss for classifiers over a large
vocabulary (word2vec's variants) that scores each example's true classes against a few
classes drawn from a noise distribution instead of normalizing over every class."""
import numpy as np

from rill.fluid.layer_helper import LayerHelper
from rill.fluid.layers.checks import check_variable_and_dtype
from rill.fluid.layers.tensor import assign

__all__ = ["nce"]

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
