"""fluid.DataFeeder: a minibatch of samples (tuples, one value per feed variable) into the
feed dict Executor.run takes, each column as an array of its variable's dtype and shape."""
import numpy as np

from rill.fluid.framework import Variable, default_main_program, dtype_to_np

__all__ = ["DataFeeder"]


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
        columns = [[] for _ in self.feed_vars]
        for sample in iterable:
            if len(sample) != len(self.feed_vars):
                raise ValueError("a sample has %d values; the feed list has %d variables (%s)" % (
                    len(sample), len(self.feed_vars), ", ".join(v.name for v in self.feed_vars)))
            for column, value in zip(columns, sample):
                column.append(value)
        out = {}
        for v, column in zip(self.feed_vars, columns):
            arr = np.array(column, dtype=dtype_to_np(v.dtype))
            example = list(v.shape[1:])
            if example and all(d > 0 for d in example):  # a label 3 becomes [3], as declared
                arr = arr.reshape([len(column)] + example)
            out[v.name] = arr
        return out
