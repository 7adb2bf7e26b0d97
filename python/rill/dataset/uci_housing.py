"""UCI housing (Boston house prices): samples (13 features float32, [price] float32).

housing.data holds 506 rows of 14 numbers; each feature is centred on its mean and
divided by its range over all rows, and the first 80% of the rows train, the rest test.
"""
import numpy as np

from rill.dataset.common import dataset_file

__all__ = ["train", "test", "feature_names"]

feature_names = ["CRIM", "ZN", "INDUS", "CHAS", "NOX", "RM", "AGE", "DIS", "RAD", "TAX", "PTRATIO", "B", "LSTAT"]
_TRAIN_RATIO = 0.8


def _rows():
    data = np.fromfile(dataset_file("uci_housing", "housing.data"), sep=" ")
    if data.size % 14 != 0:
        raise ValueError("rill.dataset.uci_housing: housing.data holds %d numbers, not rows of 14" % data.size)
    data = data.reshape(-1, 14)
    features = data[:, :13]
    span = features.max(axis=0) - features.min(axis=0)
    data[:, :13] = (features - features.mean(axis=0)) / np.where(span == 0, 1, span)
    return data


def _reader(part):
    def reader():
        data = _rows()
        cut = int(len(data) * _TRAIN_RATIO)
        for row in (data[:cut] if part == "train" else data[cut:]):
            yield row[:-1].astype("float32"), row[-1:].astype("float32")
    return reader


def train():
    return _reader("train")


def test():
    return _reader("test")
