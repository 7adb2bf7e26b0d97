"""CIFAR-10 and CIFAR-100: samples (3072 pixels float32 in [0, 1], CHW order; label int),
from the python tarballs (pickled batches of 'data' and 'labels' / 'fine_labels')."""
import pickle
import tarfile

import numpy as np

from rill.dataset.common import dataset_file

__all__ = ["train10", "test10", "train100", "test100"]


def _reader(archive, member_part):
    def reader():
        with tarfile.open(dataset_file("cifar", archive), mode="r") as tar:
            names = sorted(m.name for m in tar.getmembers() if member_part in m.name and m.isfile())
            for name in names:
                batch = pickle.load(tar.extractfile(name), encoding="bytes")
                batch = {k.decode() if isinstance(k, bytes) else k: v for k, v in batch.items()}
                labels = batch.get("labels", batch.get("fine_labels"))
                if labels is None or "data" not in batch:
                    raise ValueError("rill.dataset.cifar: %s of %s holds no data and labels" % (name, archive))
                for sample, label in zip(batch["data"], labels):
                    yield (np.asarray(sample) / 255.0).astype(np.float32), int(label)
    return reader


def train10():
    return _reader("cifar-10-python.tar.gz", "data_batch")


def test10():
    return _reader("cifar-10-python.tar.gz", "test_batch")


def train100():
    return _reader("cifar-100-python.tar.gz", "train")


def test100():
    return _reader("cifar-100-python.tar.gz", "test")
