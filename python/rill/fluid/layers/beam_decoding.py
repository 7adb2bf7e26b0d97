"""fluid.layers beam_search and beam_search_decode: decoding a sequence model by beam search
(machine translation's generator). Each step keeps, per source sentence, the beam_size
best candidates over its prefixes (a LoD tensor of two levels: the sources' prefixes,
each prefix's candidates); beam_search_decode walks the steps back into sentences."""
from rill.fluid.layer_helper import LayerHelper
from rill.fluid.layers.checks import check_variable_and_dtype

__all__ = ["beam_search", "beam_search_decode"]


def beam_search(pre_ids, pre_scores, ids, scores, beam_size, end_id, level=0, is_accumulated=True, name=None,
                return_parent_idx=False):
    """(selected_ids, selected_scores[, parent_idx]): one step of beam search. `ids` (may be
    None: candidate k is id k) and `scores` hold each prefix's candidates; scores are
    accumulated, or probabilities with is_accumulated=False."""
    check_variable_and_dtype(pre_ids, "pre_ids", ["int64"], "beam_search")
    check_variable_and_dtype(pre_scores, "pre_scores", ["float32"], "beam_search")
    check_variable_and_dtype(scores, "scores", ["float32"], "beam_search")
    if ids is not None:
        check_variable_and_dtype(ids, "ids", ["int64"], "beam_search")
    helper = LayerHelper("beam_search", name=name)
    selected_ids = helper.create_tmp_variable(dtype="int64", stop_gradient=True)
    selected_scores = helper.create_tmp_variable(dtype="float32", stop_gradient=True)
    parent_idx = helper.create_tmp_variable(dtype="int32", stop_gradient=True)
    selected_ids._shape = selected_scores._shape = [-1, 1]
    selected_ids._lod_level = selected_scores._lod_level = 2
    inputs = {"pre_ids": [pre_ids], "pre_scores": [pre_scores], "scores": [scores]}
    if ids is not None:
        inputs["ids"] = [ids]
    helper.append_op(type="beam_search", inputs=inputs,
                     outputs={"selected_ids": [selected_ids], "selected_scores": [selected_scores],
                              "parent_idx": [parent_idx]},
                     attrs={"level": level, "beam_size": beam_size, "end_id": end_id, "is_accumulated": is_accumulated})
    if return_parent_idx:
        return selected_ids, selected_scores, parent_idx
    return selected_ids, selected_scores


def beam_search_decode(ids, scores, beam_size, end_id, name=None):
    """(sentence_ids, sentence_scores): the sentences of the beam search whose steps the
    tensor arrays `ids` and `scores` hold, each source's best first."""
    check_variable_and_dtype(ids, "ids", ["int64"], "beam_search_decode")
    check_variable_and_dtype(scores, "scores", ["float32", "float64"], "beam_search_decode")
    helper = LayerHelper("beam_search_decode", name=name)
    sentence_ids = helper.create_tmp_variable(dtype="int64", stop_gradient=True)
    sentence_scores = helper.create_tmp_variable(dtype=scores.dtype, stop_gradient=True)
    sentence_ids._lod_level = sentence_scores._lod_level = 2
    helper.append_op(type="beam_search_decode", inputs={"Ids": [ids], "Scores": [scores]},
                     outputs={"SentenceIds": [sentence_ids], "SentenceScores": [sentence_scores]},
                     attrs={"beam_size": beam_size, "end_id": end_id})
    return sentence_ids, sentence_scores
