"""The Penn Treebank as Mikolov's simple-examples has it: a word dictionary and n-grams
(or source/target sequences) of word ids, from simple-examples.tgz.

build_dict counts the words of the train and valid texts (each line also counts one
'<s>' and one '<e>'), keeps those seen more than min_word_freq times, most frequent first
(ties by the word), and gives '<unk>' the last id. A line reads as '<s>' + its words +
'<e>', unknown words as '<unk>'; NGRAM gives each window of n ids, SEQ each line as
(<s> + ids, ids + <e>).
"""
import collections
import tarfile

from rill.dataset.common import dataset_file

__all__ = ["build_dict", "train", "test", "DataType"]

_TRAIN = "./simple-examples/data/ptb.train.txt"
_VALID = "./simple-examples/data/ptb.valid.txt"


class DataType(object):
    NGRAM = 1
    SEQ = 2


def _lines(member):
    with tarfile.open(dataset_file("imikolov", "simple-examples.tgz")) as tar:
        for line in tar.extractfile(member):
            yield line.decode("utf-8").strip().split()


def build_dict(min_word_freq=50):
    freq = collections.Counter()
    for member in (_TRAIN, _VALID):
        for words in _lines(member):
            freq.update(words)
            freq["<s>"] += 1
            freq["<e>"] += 1
    freq.pop("<unk>", None)
    kept = sorted((w for w, c in freq.items() if c > min_word_freq), key=lambda w: (-freq[w], w))
    word_idx = {w: i for i, w in enumerate(kept)}
    word_idx["<unk>"] = len(kept)
    return word_idx


def _reader(member, word_idx, n, data_type):
    if data_type not in (DataType.NGRAM, DataType.SEQ):
        raise ValueError("rill.dataset.imikolov: data_type must be DataType.NGRAM or DataType.SEQ")
    unk = word_idx["<unk>"]

    def reader():
        for words in _lines(member):
            if data_type == DataType.NGRAM:
                line = ["<s>"] + words + ["<e>"]
                if len(line) < n:
                    continue
                ids = [word_idx.get(w, unk) for w in line]
                for i in range(n, len(ids) + 1):
                    yield tuple(ids[i - n:i])
            else:
                ids = [word_idx.get(w, unk) for w in words]
                src, trg = [word_idx["<s>"]] + ids, ids + [word_idx["<e>"]]
                if n > 0 and len(src) > n:
                    continue
                yield src, trg
    return reader


def train(word_idx, n, data_type=DataType.NGRAM):
    return _reader(_TRAIN, word_idx, n, data_type)


def test(word_idx, n, data_type=DataType.NGRAM):
    return _reader(_VALID, word_idx, n, data_type)
