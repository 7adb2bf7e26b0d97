"""fluid.create_lod_tensor and create_random_int_lodtensor: LoD tensors made from Python data.

A LoD is given as Fluid gives it here, by each level's sequence lengths
("recursive sequence lengths"): [[2, 3]] is two sequences of 2 and 3 rows.
"""
import numpy as np

from rill.fluid import core

__all__ = ["create_lod_tensor", "create_random_int_lodtensor"]


def create_lod_tensor(data, recursive_seq_lens, place):
    """A LoDTensor of `data` with the LoD `recursive_seq_lens`.

    `data` is a numpy array (its rows are the sequences' entries), a LoDTensor (its values are
    copied and given the new LoD), or a list of sequences of integers (one level: each
    sequence's length must be the one `recursive_seq_lens` gives; the entries become an int64
    column). A LoD that does not fit the data is a ValueError."""
    if isinstance(data, core.LoDTensor):
        return create_lod_tensor(np.array(data), recursive_seq_lens, place)
    if isinstance(data, list):
        lengths = [len(seq) for seq in data]
        if [lengths] != [list(level) for level in recursive_seq_lens]:
            raise ValueError("create_lod_tensor: the sequences' lengths %s are not the LoD's %s"
                             % (lengths, recursive_seq_lens))
        flat = np.concatenate([np.asarray(seq) for seq in data], axis=0).astype("int64") if data else \
            np.zeros([0], "int64")
        return create_lod_tensor(flat.reshape([len(flat), 1]), recursive_seq_lens, place)
    if isinstance(data, np.ndarray):
        tensor = core.LoDTensor()
        tensor.set(data, place)
        tensor.set_recursive_sequence_lengths(recursive_seq_lens)
        if not tensor.has_valid_recursive_sequence_lengths():
            raise ValueError("create_lod_tensor: the LoD %s does not fit data of %d rows"
                             % (recursive_seq_lens, data.shape[0] if data.ndim else 0))
        return tensor
    raise TypeError("create_lod_tensor: data must be a LoDTensor, a numpy array or a list, got %s"
                    % type(data).__name__)


def create_random_int_lodtensor(recursive_seq_lens, base_shape, place, low, high):
    """A LoDTensor of int64 values drawn uniformly from [low, high], of shape
    [total length of the last level] + base_shape, with the LoD `recursive_seq_lens`."""
    shape = [sum(recursive_seq_lens[-1])] + list(base_shape)
    return create_lod_tensor(np.random.randint(low, high + 1, shape).astype("int64"), recursive_seq_lens, place)
