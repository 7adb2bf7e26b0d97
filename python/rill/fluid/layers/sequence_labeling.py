"""fluid.layers' sequence-labelling and decoding layers, as Fluid writes them: a linear-chain
CRF's cost (linear_chain_crf), its decoding (crf_decoding, which reads the CRF's transition
parameter by name), the chunk metrics of the tags found (chunk_eval), the CTC loss (warpctc)
and CTC's greedy decoding (ctc_greedy_decoder), and the edit distance of token sequences
(edit_distance). Sequences are
LoD tensors, or padded [batch, max_len, ...] tensors with a length of each (Fluid 1.6 and
later)."""
from rill.fluid.layer_helper import LayerHelper
from rill.fluid.layers import nn
from rill.fluid.layers.checks import check_variable_and_dtype
from rill.fluid.param_attr import ParamAttr

__all__ = ["linear_chain_crf", "crf_decoding", "chunk_eval", "warpctc", "ctc_greedy_decoder", "edit_distance"]


def _check_length(layer, length):
    if length is not None:
        check_variable_and_dtype(length, "length", ["int64"], layer)


def linear_chain_crf(input, label, param_attr=None, length=None):
    """The negative log-likelihood ([sequences, 1]) of each sequence's `label` tags under a
    linear-chain CRF of `input`'s emission scores ([N, tags] with LoD, or [batch, max_len,
    tags] with `length`), to be minimized. Creates the transition parameter [tags + 2, tags]:
    start scores, end scores, then tag-to-tag; name it in param_attr to decode with it."""
    check_variable_and_dtype(input, "input", ["float32", "float64"], "linear_chain_crf")
    check_variable_and_dtype(label, "label", ["int64"], "linear_chain_crf")
    _check_length("linear_chain_crf", length)
    helper = LayerHelper("linear_chain_crf", **locals())
    tags = int(input.shape[-1])
    if tags <= 0:
        raise ValueError("linear_chain_crf: input's last dimension (the tags) must be known, got %s"
                         % list(input.shape))
    dtype = helper.input_dtype()
    transition = helper.create_parameter(attr=helper.param_attr, shape=[tags + 2, tags], dtype=dtype)
    alpha = helper.create_tmp_variable(dtype)
    emission_exps = helper.create_tmp_variable(dtype)
    transition_exps = helper.create_tmp_variable(dtype)
    log_likelihood = helper.create_tmp_variable(dtype)
    log_likelihood._shape = [-1, 1]
    inputs = {"Emission": [input], "Transition": transition, "Label": [label]}
    if length is not None:
        inputs["Length"] = [length]
    helper.append_op(type="linear_chain_crf", inputs=inputs,
                     outputs={"Alpha": [alpha], "EmissionExps": [emission_exps],
                              "TransitionExps": transition_exps, "LogLikelihood": log_likelihood})
    return log_likelihood


def crf_decoding(input, param_attr, label=None, length=None):
    """The highest-scoring tags of each sequence of `input` under the transition parameter
    param_attr names (a linear_chain_crf's): int64 [N, 1] with input's LoD, or [batch, max_len]
    with `length`. Given `label`, 1 where the path finds its tag and 0 where not."""
    check_variable_and_dtype(input, "input", ["float32", "float64"], "crf_decoding")
    _check_length("crf_decoding", length)
    helper = LayerHelper("crf_decoding", **locals())
    name = param_attr.name if isinstance(param_attr, ParamAttr) else param_attr
    if not isinstance(name, str):
        raise ValueError("crf_decoding: param_attr must name linear_chain_crf's transition parameter")
    transition = helper.get_parameter(name)
    viterbi_path = helper.create_tmp_variable("int64")
    viterbi_path._shape = [-1, 1] if length is None else [-1, int(input.shape[1])]
    viterbi_path._lod_level = input.lod_level
    inputs = {"Emission": [input], "Transition": transition}
    if label is not None:
        check_variable_and_dtype(label, "label", ["int64"], "crf_decoding")
        inputs["Label"] = label
    if length is not None:
        inputs["Length"] = length
    helper.append_op(type="crf_decoding", inputs=inputs, outputs={"ViterbiPath": [viterbi_path]})
    return viterbi_path


def chunk_eval(input, label, chunk_scheme, num_chunk_types, excluded_chunk_types=None, seq_length=None):
    """The chunks of `input`'s int64 tags against `label`'s under chunk_scheme ("IOB", "IOE",
    "IOBES" or "plain"): (precision, recall, f1_score, num_infer_chunks, num_label_chunks,
    num_correct_chunks)."""
    check_variable_and_dtype(input, "input", ["int64"], "chunk_eval")
    check_variable_and_dtype(label, "label", ["int64"], "chunk_eval")
    _check_length("chunk_eval", seq_length)
    if chunk_scheme not in ("IOB", "IOE", "IOBES", "plain"):
        raise ValueError("chunk_eval: chunk_scheme must be IOB, IOE, IOBES or plain, got %r" % (chunk_scheme,))
    helper = LayerHelper("chunk_eval", **locals())
    outputs = {}
    for slot, dtype in (("Precision", "float32"), ("Recall", "float32"), ("F1-Score", "float32"),
                        ("NumInferChunks", "int64"), ("NumLabelChunks", "int64"), ("NumCorrectChunks", "int64")):
        outputs[slot] = helper.create_tmp_variable(dtype, stop_gradient=True)
        outputs[slot]._shape = [1]
    inputs = {"Inference": [input], "Label": [label]}
    if seq_length is not None:
        inputs["SeqLength"] = [seq_length]
    helper.append_op(type="chunk_eval", inputs=inputs, outputs={k: [v] for k, v in outputs.items()},
                     attrs={"num_chunk_types": num_chunk_types, "chunk_scheme": chunk_scheme,
                            "excluded_chunk_types": list(excluded_chunk_types or [])})
    return tuple(outputs[slot] for slot in ("Precision", "Recall", "F1-Score", "NumInferChunks", "NumLabelChunks",
                                            "NumCorrectChunks"))


def warpctc(input, label, blank=0, norm_by_times=False, input_length=None, label_length=None):
    """The CTC loss ([batch, 1]) of each sequence of unscaled scores `input` ([T, classes + 1]
    with LoD, or [max_T, batch, classes + 1] with input_length) against its int32 `label`
    ([L, 1] with LoD, or [batch, max_L] with label_length); `blank` is the blank's class.
    norm_by_times divides each sequence's gradient by its length."""
    check_variable_and_dtype(input, "input", ["float32", "float64"], "warpctc")
    check_variable_and_dtype(label, "label", ["int32"], "warpctc")
    helper = LayerHelper("warpctc", **locals())
    loss = helper.create_tmp_variable(input.dtype)
    loss._shape = [-1, 1]
    grad = helper.create_tmp_variable(input.dtype, stop_gradient=True)
    inputs = {"Logits": [input], "Label": [label]}
    if (input_length is None) != (label_length is None):
        raise ValueError("warpctc: give input_length and label_length together, or neither")
    if input_length is not None:
        check_variable_and_dtype(input_length, "input_length", ["int64"], "warpctc")
        check_variable_and_dtype(label_length, "label_length", ["int64"], "warpctc")
        inputs.update({"LogitsLength": [input_length], "LabelLength": [label_length]})
    helper.append_op(type="warpctc", inputs=inputs, outputs={"WarpCTCGrad": [grad], "Loss": [loss]},
                     attrs={"blank": blank, "norm_by_times": norm_by_times})
    return loss


def ctc_greedy_decoder(input, blank, input_length=None, padding_value=0, name=None):
    """Each sequence's best path under a CTC output's per-step probabilities (input [T, classes]
    with LoD, or [batch, max_len, classes] with input_length), repeats merged and `blank`
    removed: int64 [T', 1] with the new LoD ([1, 1] holding -1 when nothing is left), or, padded,
    ([batch, max_len] filled with padding_value, [batch, 1] lengths)."""
    check_variable_and_dtype(input, "input", ["float32", "float64"], "ctc_greedy_decoder")
    helper = LayerHelper("ctc_greedy_decoder", **locals())
    _, best = nn.topk(input, k=1)
    out = helper.create_tmp_variable("int64", stop_gradient=True)
    if input_length is None:
        out._shape = [-1, 1]
        out._lod_level = 1
        helper.append_op(type="ctc_align", inputs={"Input": [best]}, outputs={"Output": [out]},
                         attrs={"merge_repeated": True, "blank": blank})
        return out
    check_variable_and_dtype(input_length, "input_length", ["int64"], "ctc_greedy_decoder")
    out._shape = [-1, int(input.shape[1])]
    out_length = helper.create_tmp_variable("int64", stop_gradient=True)
    out_length._shape = [-1, 1]
    helper.append_op(type="ctc_align", inputs={"Input": [nn.squeeze(best, [2])], "InputLength": [input_length]},
                     outputs={"Output": [out], "OutputLength": [out_length]},
                     attrs={"merge_repeated": True, "blank": blank, "padding_value": padding_value})
    return out, out_length


def edit_distance(input, label, normalized=True, ignored_tokens=None, input_length=None, label_length=None):
    """The Levenshtein distance of each sequence of int64 tokens in `input` to its sequence in
    `label` (LoD tensors, or padded [batch, max_len] with input_length and label_length), divided
    by the label's length when normalized; ignored_tokens are removed from both first (LoD
    tensors only). Returns (distances [sequences, 1] float32, the sequence count [1])."""
    check_variable_and_dtype(input, "input", ["int64"], "edit_distance")
    check_variable_and_dtype(label, "label", ["int64"], "edit_distance")
    if (input_length is None) != (label_length is None):
        raise ValueError("edit_distance: input_length and label_length come together")
    helper = LayerHelper("edit_distance", **locals())
    if ignored_tokens:
        if input_length is not None:
            raise ValueError("edit_distance: ignored_tokens applies to LoD tensors, not padded ones")
        erased = []
        for x in (input, label):
            out = helper.create_tmp_variable("int64", stop_gradient=True)
            out._shape = [-1, 1]
            out._lod_level = 1
            helper.append_op(type="sequence_erase", inputs={"X": [x]}, outputs={"Out": [out]},
                             attrs={"tokens": list(ignored_tokens)})
            erased.append(out)
        input, label = erased
    inputs = {"Hyps": [input], "Refs": [label]}
    if input_length is not None:
        inputs["HypsLength"] = [input_length]
        inputs["RefsLength"] = [label_length]
    distance = helper.create_tmp_variable("float32", stop_gradient=True)
    distance._shape = [-1, 1]
    count = helper.create_tmp_variable("int64", stop_gradient=True)
    count._shape = [1]
    helper.append_op(type="edit_distance", inputs=inputs, outputs={"Out": [distance], "SequenceNum": [count]},
                     attrs={"normalized": normalized})
    return distance, count
