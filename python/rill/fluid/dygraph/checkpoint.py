"""fluid.save_dygraph and fluid.load_dygraph: a layer's or an optimizer's state dict in
Paddle's files, so that either side reads what the other wrote (paddle.save and paddle.load
write and read the same form).

The file is a pickle of {key: numpy array (or the value itself when it is not a tensor: a
scheduler's state)}, plus "StructuredToParameterName@@": {key: variable name} of the
tensors. save_dygraph writes protocol 2, a dict holding a parameter as MODEL_PATH.pdparams,
any other (an optimizer's) as MODEL_PATH.pdopt; load_dygraph(MODEL_PATH) reads both back.
"""
import os
import pickle

from rill.fluid import framework

__all__ = ["save_dygraph", "load_dygraph"]

NAME_TABLE = "StructuredToParameterName@@"
_PARAMS, _OPTIMIZER = ".pdparams", ".pdopt"


def saved_form(state_dict):
    """The dict a state dict is pickled as: tensors as numpy arrays, and the name table."""
    saved, names = {}, {}
    for key, value in state_dict.items():
        if isinstance(value, framework.Variable):
            saved[key], names[key] = value.numpy(), value.name
        else:
            saved[key] = value
    saved[NAME_TABLE] = names
    return saved


def write_pickle(obj, path, protocol):
    """Pickles `obj` to `path`, making its directory if need be. Written whole to a
    neighbour, then renamed: a crash leaves the old file or the new one, never part of one."""
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path + ".tmp", "wb") as f:
        pickle.dump(obj, f, protocol=protocol)
    os.replace(path + ".tmp", path)


def read_pickle(path, caller):
    """The object pickled at `path`; an error naming `caller` and the file when it is not
    one (a truncated or foreign file)."""
    with open(path, "rb") as f:
        try:
            return pickle.load(f, encoding="latin1")
        except (pickle.UnpicklingError, EOFError, ValueError, AttributeError, ImportError) as e:
            raise ValueError("%s: %s is not a state Paddle or Rill saved: %s" % (caller, path, e))


def save_dygraph(state_dict, model_path):
    """Writes state_dict to model_path + ".pdparams" (it holds a parameter) or ".pdopt"."""
    if not os.path.basename(model_path):
        raise ValueError("save_dygraph: model_path must be dirname/file_prefix, got %r" % model_path)
    if not state_dict:
        raise ValueError("save_dygraph: the state dict is empty; nothing to save")
    holds_params = any(isinstance(v, framework.Parameter) for v in state_dict.values())
    write_pickle(saved_form(state_dict), model_path + (_PARAMS if holds_params else _OPTIMIZER), protocol=2)


def load_dygraph(model_path, keep_name_table=False):
    """(the parameters' state dict, the optimizer's) from model_path + ".pdparams" and
    ".pdopt" (either suffix may be given); {} and None for a file that is not there, an
    error when neither is."""
    for suffix in (_PARAMS, _OPTIMIZER):
        if model_path.endswith(suffix):
            model_path = model_path[:-len(suffix)]
    found = [os.path.exists(model_path + s) for s in (_PARAMS, _OPTIMIZER)]
    if not any(found):
        raise ValueError("load_dygraph: neither %s%s nor %s%s exists" % (model_path, _PARAMS, model_path, _OPTIMIZER))
    params, optimizer = [_read_state(model_path + s, keep_name_table) if there else None
                         for s, there in zip((_PARAMS, _OPTIMIZER), found)]
    return params if params is not None else {}, optimizer


def _read_state(path, keep_name_table):
    state = read_pickle(path, "load_dygraph")
    if not isinstance(state, dict):
        raise ValueError("load_dygraph: %s holds a %s, not a state dict" % (path, type(state).__name__))
    if not keep_name_table:
        state.pop(NAME_TABLE, None)
    return state
