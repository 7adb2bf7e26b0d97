"""cifar: (3072 pixels float32 in [0, 1], label int) of 32x32 RGB images: 1280 train, 256
test, 10 classes (train10/test10) or 100 (train100/test100). Each class's images are one
fixed random image of its own with noise added."""
import numpy as np


def _reader(count, seed, classes):
    prototypes = np.random.RandomState(3072 + classes).uniform(0, 1, (classes, 3072)).astype("float32")

    def reader():
        rng = np.random.RandomState(seed)
        for _ in range(count):
            label = int(rng.randint(classes))
            yield np.clip(prototypes[label] + rng.normal(0, 0.2, 3072), 0, 1).astype("float32"), label
    return reader


def train10():
    return _reader(1280, 1, 10)


def test10():
    return _reader(256, 2, 10)


def train100():
    return _reader(1280, 1, 100)


def test100():
    return _reader(256, 2, 100)
