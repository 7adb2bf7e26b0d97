"""rill.dataset reads the datasets' own files (written here, small, in their formats) as
Paddle's readers give them, and names the missing file when one is not there."""
import gzip
import io
import pickle
import struct
import tarfile

import numpy as np
import pytest

import rill
from rill.dataset import cifar, imikolov, mnist, uci_housing


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("RILL_DATASET_HOME", str(tmp_path))
    return tmp_path


def test_a_missing_file_is_named(home):
    with pytest.raises(IOError, match=r"mnist/train-images-idx3-ubyte.gz is not there; Rill downloads nothing"):
        list(mnist.train()())


def test_uci_housing_normalizes_features_and_splits_80_20(home):
    rows = np.arange(10 * 14, dtype="float64").reshape(10, 14) % 17
    (home / "uci_housing").mkdir()
    (home / "uci_housing" / "housing.data").write_text("\n".join(" ".join("%g" % v for v in r) for r in rows))
    train, test = list(uci_housing.train()()), list(uci_housing.test()())
    assert len(train) == 8 and len(test) == 2
    f = rows[:, :13]
    expect = (f - f.mean(axis=0)) / (f.max(axis=0) - f.min(axis=0))
    np.testing.assert_allclose(train[3][0], expect[3], rtol=1e-6)
    assert train[3][0].dtype == np.float32 and test[1][1].tolist() == [rows[9, 13]]


def test_mnist_reads_idx_files(home):
    images = np.random.RandomState(0).randint(0, 256, (3, 28, 28)).astype(np.uint8)
    labels = np.array([7, 0, 3], np.uint8)
    (home / "mnist").mkdir()
    with gzip.open(str(home / "mnist" / "t10k-images-idx3-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">IIII", 2051, 3, 28, 28) + images.tobytes())
    with gzip.open(str(home / "mnist" / "t10k-labels-idx1-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">II", 2049, 3) + labels.tobytes())
    samples = list(mnist.test()())
    assert [label for _, label in samples] == [7, 0, 3]
    np.testing.assert_allclose(samples[1][0], images[1].reshape(-1) / 255.0 * 2 - 1, atol=1e-6)


def _add(tar, name, obj):
    blob = pickle.dumps(obj, protocol=2)
    info = tarfile.TarInfo(name)
    info.size = len(blob)
    tar.addfile(info, io.BytesIO(blob))


def test_cifar_reads_the_pickled_batches(home):
    data = np.random.RandomState(1).randint(0, 256, (4, 3072)).astype(np.uint8)
    (home / "cifar").mkdir()
    with tarfile.open(str(home / "cifar" / "cifar-10-python.tar.gz"), "w:gz") as tar:
        # keys as bytes, as the original (Python 2) pickles give them
        _add(tar, "cifar-10-batches-py/data_batch_1", {b"data": data[:3], b"labels": [1, 2, 3]})
        _add(tar, "cifar-10-batches-py/test_batch", {b"data": data[3:], b"labels": [9]})
    train, test = list(cifar.train10()()), list(cifar.test10()())
    assert [label for _, label in train] == [1, 2, 3] and [label for _, label in test] == [9]
    np.testing.assert_allclose(test[0][0], data[3] / 255.0, rtol=1e-6)


def test_imikolov_dict_and_ngrams(home):
    train_text = "a b a\nb a c\n"
    valid_text = "a c\n"
    (home / "imikolov").mkdir()
    with tarfile.open(str(home / "imikolov" / "simple-examples.tgz"), "w:gz") as tar:
        for name, text in (("./simple-examples/data/ptb.train.txt", train_text),
                           ("./simple-examples/data/ptb.valid.txt", valid_text)):
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    # counts: a 4, <s> 3, <e> 3, b 2, c 2; more than 1 are kept, most frequent first
    words = imikolov.build_dict(min_word_freq=1)
    assert words == {"a": 0, "<e>": 1, "<s>": 2, "b": 3, "c": 4, "<unk>": 5}
    grams = list(imikolov.train(words, 3)())
    assert grams[:3] == [(2, 0, 3), (0, 3, 0), (3, 0, 1)]
    assert len(grams) == 6
    assert list(imikolov.test(words, 0, imikolov.DataType.SEQ)()) == [([2, 0, 4], [0, 4, 1])]
    batched = list(rill.batch(imikolov.train(words, 3), 4)())
    assert [len(b) for b in batched] == [4, 2]
