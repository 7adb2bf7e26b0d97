"""paddle.save and paddle.load: a layer's or an optimizer's state dict (or a tensor, or lists
and dicts of them) in Paddle 2.x's pickle files, the form fluid.save_dygraph writes
(rill.fluid.dygraph.checkpoint): tensors as numpy arrays, a state dict with its name table.
"""
import numpy as np

from rill.fluid import dygraph, framework
from rill.fluid.dygraph import checkpoint

__all__ = ["save", "load"]


def _converted(obj, kind, convert):
    """`obj` with each leaf of type `kind` in it (in lists, tuples and dicts) convert(leaf)."""
    if isinstance(obj, kind):
        return convert(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_converted(v, kind, convert) for v in obj)
    if isinstance(obj, dict):
        return {k: _converted(v, kind, convert) for k, v in obj.items()}
    return obj


def save(obj, path, protocol=4, **configs):
    """Writes `obj` to `path` (the full file name, ".pdparams" or ".pdopt" by convention):
    a dict of tensors as a state dict with its name table, anything else with its tensors
    as arrays; pickle protocol 2, 3 or 4."""
    if not isinstance(protocol, int) or not 2 <= protocol <= 4:
        raise ValueError("paddle.save: protocol must be 2, 3 or 4, got %r" % (protocol,))
    if not path or path.endswith(("/", "\\")):
        raise ValueError("paddle.save: path must name a file, got %r" % (path,))
    if isinstance(obj, dict) and any(isinstance(v, framework.Variable) for v in obj.values()):
        saved = checkpoint.saved_form(obj)
    else:
        saved = _converted(obj, framework.Variable, lambda v: v.numpy())
    checkpoint.write_pickle(saved, path, protocol)


def load(path, return_numpy=False, keep_name_table=False, **configs):
    """What `save` (or fluid.save_dygraph, or Paddle) wrote to `path`: a state dict without
    its name table (unless keep_name_table), its arrays as tensors in dynamic mode (numpy
    arrays in static mode or with return_numpy), ready for set_state_dict."""
    obj = checkpoint.read_pickle(path, "paddle.load")
    if isinstance(obj, dict) and not keep_name_table:
        obj.pop(checkpoint.NAME_TABLE, None)
    return obj if return_numpy or not dygraph.enabled() else _converted(obj, np.ndarray, dygraph.to_variable)
