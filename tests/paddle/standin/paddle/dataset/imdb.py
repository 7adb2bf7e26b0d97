"""imdb (movie reviews, positive or negative): word_dict() gives a word -> id dict of 5148
words (the real dict's size, '<unk>' last) and train/test(word_dict) yield (word ids, label)
reviews of 8 to 40 words: 1280 train, 256 test. Forty of the words carry sentiment, twenty
positive and twenty negative; a review's label is 1 (positive) where its positive words
outnumber its negative ones (each review holds a few, and never as many of each)."""
import numpy as np

_WORDS = 5148
_POSITIVE = range(0, 20)
_NEGATIVE = range(20, 40)


def word_dict():
    words = {"w%d" % i: i for i in range(_WORDS - 1)}
    words["<unk>"] = _WORDS - 1
    return words


def _reader(word_dict, count, seed):
    if len(word_dict) < 100:
        raise ValueError("imdb: the dict must hold at least 100 words")
    neutral = len(word_dict) - 1

    def reader():
        rng = np.random.RandomState(seed)
        for _ in range(count):
            length = int(rng.randint(8, 41))
            words = list(rng.randint(40, neutral, size=length))
            label = int(rng.randint(2))
            major, minor = (_POSITIVE, _NEGATIVE) if label else (_NEGATIVE, _POSITIVE)
            strong = int(rng.randint(2, 5))
            marked = [int(rng.choice(major)) for _ in range(strong)] + \
                [int(rng.choice(minor)) for _ in range(int(rng.randint(0, strong - 1)))]
            for at, word in zip(rng.choice(length, size=len(marked), replace=False), marked):
                words[at] = word
            yield [int(w) for w in words], label
    return reader


def train(word_dict):
    return _reader(word_dict, 1280, 1)


def test(word_dict):
    return _reader(word_dict, 256, 2)
