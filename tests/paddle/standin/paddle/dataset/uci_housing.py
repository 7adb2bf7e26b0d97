"""uci_housing: (13 normalized features float32, [price] float32): 404 train, 102 test rows.
The price is a fixed linear function of the features plus 4 and a little noise."""
import numpy as np

_W = np.random.RandomState(13).uniform(-2, 2, 13).astype("float32")


def _reader(count, seed):
    def reader():
        rng = np.random.RandomState(seed)
        for _ in range(count):
            x = rng.uniform(-0.5, 0.5, 13).astype("float32")
            yield x, np.array([x @ _W + 4 + rng.normal(0, 0.1)], "float32")
    return reader


def train():
    return _reader(404, 1)


def test():
    return _reader(102, 2)
