"""fluid.average: running means of values fetched from a program, kept in Python."""
import numpy as np

__all__ = ["WeightedAverage"]


def _is_number_or_matrix(value):
    return isinstance(value, (int, float, np.number)) or (isinstance(value, np.ndarray) and value.dtype.kind in "iuf")


class WeightedAverage(object):
    """sum(value * weight) / sum(weight) over the values added since the last reset; a
    value may be a number or an array (averaged element by element), a weight a number."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.numerator = None
        self.denominator = None

    def add(self, value, weight):
        if not _is_number_or_matrix(value):
            raise ValueError("The 'value' must be a number(int, float) or a numpy ndarray.")
        if not _is_number_or_matrix(weight) or np.size(weight) != 1:
            raise ValueError("The 'weight' must be a number(int, float) or a numpy ndarray of one element.")
        weight = float(np.asarray(weight).reshape(-1)[0])
        if self.numerator is None:
            self.numerator = value * weight
            self.denominator = weight
        else:
            self.numerator = self.numerator + value * weight
            self.denominator += weight

    def eval(self):
        if self.numerator is None or self.denominator == 0:
            raise ValueError("There is no data to be averaged in WeightedAverage.")
        return self.numerator / self.denominator
