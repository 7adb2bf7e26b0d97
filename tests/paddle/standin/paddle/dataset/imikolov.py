"""imikolov (the PTB corpus): build_dict() gives a word -> id dict of 2073 words (the real
dict's size, '<unk>' last) and train/test(word_dict, n) yield n-grams, tuples of n word ids:
3200 train, 320 test. The text is a walk through 60 of the words in which each word
follows from the one before."""
import numpy as np

_WORDS = 2073
_USED = 60


def build_dict(min_word_freq=50):
    words = {"w%d" % i: i for i in range(_WORDS - 1)}
    words["<unk>"] = _WORDS - 1
    return words


def _reader(word_dict, n, count, seed):
    if len(word_dict) < _USED:
        raise ValueError("imikolov: the dict must hold at least %d words" % _USED)
    successor = np.random.RandomState(60).permutation(_USED)

    def reader():
        rng = np.random.RandomState(seed)
        for _ in range(count):
            gram = [int(rng.randint(_USED))]
            for _ in range(n - 1):
                gram.append(int(successor[gram[-1]]))
            yield tuple(gram)
    return reader


def train(word_dict, n, data_type=None):
    return _reader(word_dict, n, 3200, 1)


def test(word_dict, n, data_type=None):
    return _reader(word_dict, n, 320, 2)
