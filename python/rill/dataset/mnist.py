"""MNIST: samples (784 pixels float32 in [-1, 1], label int), from the IDX files
(gzipped): 60000 train, 10000 test."""
import gzip
import struct

import numpy as np

from rill.dataset.common import dataset_file

__all__ = ["train", "test"]


def _idx(path, magic):
    with gzip.open(path, "rb") as f:
        data = f.read()
    found, count = struct.unpack(">II", data[:8])
    if found != magic:
        raise ValueError("rill.dataset.mnist: %s is not an IDX file of magic %d (it has %d)" % (path, magic, found))
    return count, data


def _reader(prefix):
    def reader():
        count, images = _idx(dataset_file("mnist", prefix + "-images-idx3-ubyte.gz"), 2051)
        labels_count, labels = _idx(dataset_file("mnist", prefix + "-labels-idx1-ubyte.gz"), 2049)
        if labels_count != count:
            raise ValueError("rill.dataset.mnist: %d images but %d labels" % (count, labels_count))
        rows, cols = struct.unpack(">II", images[8:16])
        pixels = np.frombuffer(images, np.uint8, count * rows * cols, 16).reshape(count, rows * cols)
        tags = np.frombuffer(labels, np.uint8, count, 8)
        for i in range(count):
            yield (pixels[i].astype("float32") / 255.0 * 2.0 - 1.0), int(tags[i])
    return reader


def train():
    return _reader("train")


def test():
    return _reader("t10k")
