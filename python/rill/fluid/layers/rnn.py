"""fluid.layers' recurrent layers, as Fluid writes them. dynamic_lstm and dynamic_gru take
their input already projected (an fc of 4 * hidden or 3 * hidden columns before it) and run
every sequence of a LoD tensor through the recurrence; each output row is the state after
the matching input row, with the input's LoD (dynamic_lstmp's, its projection). gru_unit and lstm_unit are one step of a
batch, for recurrences written step by step (StaticRNN, DynamicRNN, While)."""
from rill.fluid.layer_helper import LayerHelper
from rill.fluid.layers import nn, tensor
from rill.fluid.layers.checks import check_variable_and_dtype
from rill.fluid.param_attr import ParamAttr

__all__ = ["dynamic_lstm", "dynamic_lstmp", "dynamic_gru", "gru_unit", "lstm_unit"]

_ACTIVATIONS = ("sigmoid", "tanh", "relu", "identity")
# gru_unit's op takes its activations by Paddle's enum: their index here.
_ACTIVATIONS_BY_INDEX = ["identity", "sigmoid", "tanh", "relu"]


def _check_activations(layer, **activations):
    for attr, name in activations.items():
        if name not in _ACTIVATIONS:
            raise ValueError("%s: %s must be one of %s, got %r" % (layer, attr, ", ".join(_ACTIVATIONS), name))


def _check_state(layer, name, state, hidden):
    """An initial state is [batch, hidden]: a row for each sequence, which only the LoD fed
    tells, so only its width is checked here (the op checks its rows)."""
    if state is None:
        return
    check_variable_and_dtype(state, name, ["float32", "float64"], layer)
    if len(state.shape) != 2 or int(state.shape[1]) != hidden:
        raise ValueError("%s: %s must be [batch_size, %d] (a row for each sequence), got %s"
                         % (layer, name, hidden, list(state.shape)))


def _sequence_output(helper, dtype, input, width):
    out = helper.create_tmp_variable(dtype)
    out._shape = [-1, width]
    out._lod_level = input.lod_level
    return out


def dynamic_lstm(input, size, h_0=None, c_0=None, param_attr=None, bias_attr=None, use_peepholes=True,
                 is_reverse=False, gate_activation="sigmoid", cell_activation="tanh",
                 candidate_activation="tanh", dtype="float32", name=None):
    """The LSTM over each sequence of `input` ([T, size], its four gates' projections in the
    order candidate, input, forget, output; size = 4 * hidden). h_0 and c_0 ([batch, hidden],
    together) start each sequence; otherwise zeros. The weight is [hidden, 4 * hidden], the
    bias [1, 4 * hidden], or with use_peepholes [1, 7 * hidden] (then the peephole weights).
    Returns (hidden, cell), each [T, hidden] with the input's LoD."""
    check_variable_and_dtype(input, "input", ["float32", "float64"], "dynamic_lstm")
    if size % 4 != 0 or size <= 0:
        raise ValueError("dynamic_lstm: size must be 4 * the hidden size, got %d" % size)
    if int(input.shape[-1]) >= 0 and int(input.shape[-1]) != size:
        raise ValueError("dynamic_lstm: input's width %d must be size %d (the four gates' projections)"
                         % (int(input.shape[-1]), size))
    if (h_0 is None) != (c_0 is None):
        raise ValueError("dynamic_lstm: h_0 and c_0 come together")
    if bias_attr is False:
        raise ValueError("dynamic_lstm: the lstm op always has a bias; bias_attr=False is not accepted")
    _check_activations("dynamic_lstm", gate_activation=gate_activation, cell_activation=cell_activation,
                       candidate_activation=candidate_activation)
    helper = LayerHelper("lstm", **locals())
    hidden_size = size // 4
    _check_state("dynamic_lstm", "h_0", h_0, hidden_size)
    _check_state("dynamic_lstm", "c_0", c_0, hidden_size)
    weight = helper.create_parameter(attr=helper.param_attr, shape=[hidden_size, size], dtype=dtype)
    bias = helper.create_parameter(attr=helper.bias_attr, shape=[1, (7 if use_peepholes else 4) * hidden_size],
                                   dtype=dtype, is_bias=True)
    hidden = _sequence_output(helper, dtype, input, hidden_size)
    cell = _sequence_output(helper, dtype, input, hidden_size)
    batch_gate = helper.create_tmp_variable(dtype)
    batch_cell_pre_act = helper.create_tmp_variable(dtype)
    inputs = {"Input": input, "Weight": weight, "Bias": bias}
    if h_0 is not None:
        inputs["H0"] = h_0
        inputs["C0"] = c_0
    helper.append_op(type="lstm", inputs=inputs,
                     outputs={"Hidden": hidden, "Cell": cell, "BatchGate": batch_gate,
                              "BatchCellPreAct": batch_cell_pre_act},
                     attrs={"use_peepholes": use_peepholes, "is_reverse": is_reverse,
                            "gate_activation": gate_activation, "cell_activation": cell_activation,
                            "candidate_activation": candidate_activation})
    return hidden, cell


def dynamic_lstmp(input, size, proj_size, param_attr=None, bias_attr=None, use_peepholes=True, is_reverse=False,
                  gate_activation="sigmoid", cell_activation="tanh", candidate_activation="tanh",
                  proj_activation="tanh", dtype="float32", name=None, h_0=None, c_0=None, cell_clip=None,
                  proj_clip=None):
    """dynamic_lstm with a recurrent projection: r = proj_activation(h W_proj) ([T, proj_size])
    recurs instead of h. The weight is [proj_size, size], the projection weight [size / 4,
    proj_size] (both from param_attr), the bias as dynamic_lstm's. h_0 is [batch, proj_size],
    c_0 [batch, hidden]; cell_clip and proj_clip clamp c and r when given. Returns
    (projection, cell), with the input's LoD."""
    check_variable_and_dtype(input, "input", ["float32", "float64"], "dynamic_lstmp")
    if size % 4 != 0 or size <= 0:
        raise ValueError("dynamic_lstmp: size must be 4 * the hidden size, got %d" % size)
    if proj_size <= 0:
        raise ValueError("dynamic_lstmp: proj_size must be positive, got %d" % proj_size)
    if int(input.shape[-1]) >= 0 and int(input.shape[-1]) != size:
        raise ValueError("dynamic_lstmp: input's width %d must be size %d (the four gates' projections)"
                         % (int(input.shape[-1]), size))
    if (h_0 is None) != (c_0 is None):
        raise ValueError("dynamic_lstmp: h_0 and c_0 come together")
    for clip_name, clip in (("cell_clip", cell_clip), ("proj_clip", proj_clip)):
        if clip is not None and clip < 0:
            raise ValueError("dynamic_lstmp: %s must not be negative, got %r" % (clip_name, clip))
    _check_activations("dynamic_lstmp", gate_activation=gate_activation, cell_activation=cell_activation,
                       candidate_activation=candidate_activation, proj_activation=proj_activation)
    for state_name, state in (("h_0", h_0), ("c_0", c_0)):  # both dtypes before either shape, as Fluid does
        if state is not None:
            check_variable_and_dtype(state, state_name, ["float32", "float64"], "dynamic_lstmp")
    helper = LayerHelper("lstmp", **locals())
    hidden_size = size // 4
    _check_state("dynamic_lstmp", "h_0", h_0, proj_size)
    _check_state("dynamic_lstmp", "c_0", c_0, hidden_size)
    weight = helper.create_parameter(attr=helper.param_attr, shape=[proj_size, size], dtype=dtype)
    proj_weight = helper.create_parameter(attr=helper.param_attr, shape=[hidden_size, proj_size], dtype=dtype)
    bias = helper.create_parameter(attr=helper.bias_attr, shape=[1, (7 if use_peepholes else 4) * hidden_size],
                                   dtype=dtype, is_bias=True)
    projection = _sequence_output(helper, dtype, input, proj_size)
    cell = _sequence_output(helper, dtype, input, hidden_size)
    inputs = {"Input": input, "Weight": weight, "ProjWeight": proj_weight, "Bias": bias}
    if h_0 is not None:
        inputs["H0"] = h_0
        inputs["C0"] = c_0
    helper.append_op(type="lstmp", inputs=inputs,
                     outputs={"Projection": projection, "Cell": cell,
                              "BatchGate": helper.create_tmp_variable(dtype),
                              "BatchCellPreAct": helper.create_tmp_variable(dtype),
                              "BatchHidden": helper.create_tmp_variable(dtype)},
                     attrs={"use_peepholes": use_peepholes, "is_reverse": is_reverse,
                            "gate_activation": gate_activation, "cell_activation": cell_activation,
                            "candidate_activation": candidate_activation, "proj_activation": proj_activation,
                            "cell_clip": float(cell_clip or 0.0), "proj_clip": float(proj_clip or 0.0)})
    return projection, cell


def dynamic_gru(input, size, param_attr=None, bias_attr=None, is_reverse=False, gate_activation="sigmoid",
                candidate_activation="tanh", h_0=None, origin_mode=False):
    """The GRU over each sequence of `input` ([T, 3 * size], its gates' projections in the
    order update, reset, candidate; size is the hidden size). h_0 ([batch, size]) starts each
    sequence; otherwise zeros. The weight [size, 3 * size] holds W_ur [size, 2 * size] then
    W_c [size, size]; the bias is [1, 3 * size] (bias_attr=False: none). origin_mode takes
    h = u h_prev + (1 - u) c, the GRU paper's, instead of h = u c + (1 - u) h_prev.
    Returns hidden, [T, size] with the input's LoD."""
    check_variable_and_dtype(input, "input", ["float32", "float64"], "dynamic_gru")
    if size <= 0:
        raise ValueError("dynamic_gru: size must be positive, got %d" % size)
    if int(input.shape[-1]) >= 0 and int(input.shape[-1]) != 3 * size:
        raise ValueError("dynamic_gru: input's width %d must be 3 * size = %d (the three gates' projections)"
                         % (int(input.shape[-1]), 3 * size))
    _check_activations("dynamic_gru", gate_activation=gate_activation, candidate_activation=candidate_activation)
    helper = LayerHelper("gru", **locals())
    dtype = helper.input_dtype()
    _check_state("dynamic_gru", "h_0", h_0, size)
    weight = helper.create_parameter(attr=helper.param_attr, shape=[size, 3 * size], dtype=dtype)
    inputs = {"Input": input, "Weight": weight}
    if bias_attr is not False:
        inputs["Bias"] = helper.create_parameter(attr=helper.bias_attr, shape=[1, 3 * size], dtype=dtype,
                                                 is_bias=True)
    if h_0 is not None:
        inputs["H0"] = h_0
    hidden = _sequence_output(helper, dtype, input, size)
    outputs = {"Hidden": hidden}
    for slot in ("BatchGate", "BatchResetHiddenPrev", "BatchHidden"):
        outputs[slot] = helper.create_tmp_variable(dtype)
    helper.append_op(type="gru", inputs=inputs, outputs=outputs,
                     attrs={"is_reverse": is_reverse, "gate_activation": gate_activation,
                            "activation": candidate_activation, "origin_mode": origin_mode})
    return hidden


def gru_unit(input, hidden, size, param_attr=None, bias_attr=None, activation="tanh", gate_activation="sigmoid",
             origin_mode=False):
    """One GRU step for a batch: input [N, size] (its gates' projections, size = 3 * the
    hidden size D, in the order update, reset, candidate), hidden [N, D] the previous state.
    The weight [D, 3D] is W_ur [D, 2D] then W_c [D, D]; the bias [1, 3D] (bias_attr=False:
    none). Returns (hidden, reset_hidden_prev, gate)."""
    check_variable_and_dtype(input, "input", ["float32", "float64"], "gru_unit")
    check_variable_and_dtype(hidden, "hidden", ["float32", "float64"], "gru_unit")
    _check_activations("gru_unit", activation=activation, gate_activation=gate_activation)
    if size % 3 != 0 or size <= 0:
        raise ValueError("gru_unit: size must be 3 * the hidden size, got %d" % size)
    helper = LayerHelper("gru_unit", **locals())
    dtype = helper.input_dtype()
    d = size // 3
    _check_state("gru_unit", "hidden", hidden, d)
    weight = helper.create_parameter(attr=helper.param_attr, shape=[d, 3 * d], dtype=dtype)
    inputs = {"Input": input, "HiddenPrev": hidden, "Weight": weight}
    if bias_attr is not False:
        inputs["Bias"] = helper.create_parameter(attr=helper.bias_attr, shape=[1, 3 * d], dtype=dtype, is_bias=True)
    gate = helper.create_tmp_variable(dtype)
    reset_hidden_prev = helper.create_tmp_variable(dtype)
    updated = helper.create_tmp_variable(dtype)
    for v, width in ((gate, 3 * d), (reset_hidden_prev, d), (updated, d)):
        v._shape = [int(input.shape[0]), width]
    helper.append_op(type="gru_unit", inputs=inputs,
                     outputs={"Gate": gate, "ResetHiddenPrev": reset_hidden_prev, "Hidden": updated},
                     attrs={"activation": _ACTIVATIONS_BY_INDEX.index(activation),
                            "gate_activation": _ACTIVATIONS_BY_INDEX.index(gate_activation),
                            "origin_mode": origin_mode})
    return updated, reset_hidden_prev, gate


def lstm_unit(x_t, hidden_t_prev, cell_t_prev, forget_bias=0.0, param_attr=None, bias_attr=None, name=None):
    """One LSTM step for a batch: an fc of [x_t, hidden_t_prev] to the four gates (input,
    forget, output, candidate), then c = c_prev sigmoid(f + forget_bias) + sigmoid(i) tanh(j)
    and h = sigmoid(o) tanh(c). Returns (h, c), each shaped like cell_t_prev."""
    for name_, v in (("x_t", x_t), ("hidden_t_prev", hidden_t_prev), ("cell_t_prev", cell_t_prev)):
        check_variable_and_dtype(v, name_, ["float32", "float64"], "lstm_unit")
        if len(v.shape) != 2:
            raise ValueError("lstm_unit: %s must be of rank 2, got shape %s" % (name_, list(v.shape)))
    if not (int(x_t.shape[0]) == int(hidden_t_prev.shape[0]) == int(cell_t_prev.shape[0])):
        raise ValueError("lstm_unit: x_t, hidden_t_prev and cell_t_prev must have the same rows, got %s, %s, %s"
                         % (list(x_t.shape), list(hidden_t_prev.shape), list(cell_t_prev.shape)))
    if int(hidden_t_prev.shape[1]) != int(cell_t_prev.shape[1]):
        raise ValueError("lstm_unit: hidden_t_prev %s and cell_t_prev %s must have the same width"
                         % (list(hidden_t_prev.shape), list(cell_t_prev.shape)))
    helper = LayerHelper("lstm_unit", **locals())
    d = int(cell_t_prev.shape[1])
    gates = nn.fc(input=tensor.concat(input=[x_t, hidden_t_prev], axis=1), size=4 * d, param_attr=param_attr,
                  bias_attr=ParamAttr() if bias_attr is None else bias_attr)
    dtype = x_t.dtype
    c = helper.create_tmp_variable(dtype)
    h = helper.create_tmp_variable(dtype)
    for v in (c, h):
        v._shape = list(cell_t_prev.shape)
    helper.append_op(type="lstm_unit", inputs={"X": gates, "C_prev": cell_t_prev}, outputs={"C": c, "H": h},
                     attrs={"forget_bias": float(forget_bias)})
    return h, c
