"""fluid.DataFeeder: a minibatch of samples (tuples, one value per feed variable) into the
feed dict Executor.run takes: one LoDTensor per variable, of its dtype and declared shape.

A variable of lod_level L takes, per sample, sequences nested L deep; their entries are
stacked into the tensor's rows and their lengths become its LoD (each level's lengths, as
recursive_sequence_lengths gives them).
"""
import numpy as np

from rill.fluid import core
from rill.fluid.framework import Variable, default_main_program, dtype_to_np

__all__ = ["DataFeeder"]


class _Converter(object):
    """Collects one variable's values, sample by sample, and makes its LoDTensor."""

    def __init__(self, var):
        self.var = var
        self.dtype = dtype_to_np(var.dtype)
        shape = list(var.shape)
        # The rows' shape, when the declaration fixes all of it but the batch (first) dim.
        self.shape = shape if shape and sum(1 for d in shape if d < 0) <= 1 else None
        self.rows = []
        self.lengths = [[] for _ in range(var.lod_level)]

    def add(self, value, level=0):
        if level == self.var.lod_level:
            self.rows.append(value)
            return
        if not isinstance(value, (list, tuple, np.ndarray)):
            raise ValueError("DataFeeder: %s has lod_level %d; a sample's value must be nested %d deep, got %r"
                             % (self.var.name, self.var.lod_level, self.var.lod_level, value))
        self.lengths[level].append(len(value))
        for item in value:
            self.add(item, level + 1)

    def done(self, place):
        if self.var.lod_level > 0:  # the rows are the sequences' entries
            arr = np.array([np.asarray(r).reshape(-1) if np.ndim(r) else [r] for r in self.rows], dtype=self.dtype) \
                if self.rows else np.zeros([0], self.dtype)
        else:
            arr = np.array(self.rows, dtype=self.dtype)
        if self.shape is not None and arr.size:
            try:
                arr = arr.reshape(self.shape)
            except ValueError:
                raise ValueError("DataFeeder: %s is declared %s; the values fed have shape %s"
                                 % (self.var.name, list(self.var.shape), list(arr.shape)))
        tensor = core.LoDTensor()
        tensor.set(arr, place)
        if self.var.lod_level > 0:
            tensor.set_recursive_sequence_lengths(self.lengths)
        return tensor


class DataFeeder(object):
    def __init__(self, feed_list, place, program=None):
        program = default_main_program() if program is None else program
        self.feed_vars = []
        for v in feed_list:
            if isinstance(v, str):
                v = program.global_block().var(v)
            if not isinstance(v, Variable):
                raise TypeError("DataFeeder's feed_list holds Variables or their names")
            self.feed_vars.append(v)
        self.place = place

    def feed(self, iterable):
        """{name: LoDTensor} of the samples of `iterable`."""
        converters = [_Converter(v) for v in self.feed_vars]
        for sample in iterable:
            if len(sample) != len(converters):
                raise ValueError("a sample has %d values; the feed list has %d variables (%s)" % (
                    len(sample), len(converters), ", ".join(v.name for v in self.feed_vars)))
            for converter, value in zip(converters, sample):
                converter.add(value)
        return {c.var.name: c.done(self.place) for c in converters}
