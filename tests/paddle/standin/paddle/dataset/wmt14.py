"""wmt14 (French to English) as the real reader yields it: (src_ids, trg_ids, trg_ids_next),
the source sentence with <s> and <e> around it, the target after <s>, and the target then
<e>; ids 0, 1 and 2 are <s>, <e> and <unk> in both dictionaries of `dict_size` words. The
signal: a target sentence is its source's words in reverse order, each shifted by one id,
drawn from the 200 most frequent words (as real text mostly is). train() yields 2048
sentence pairs of 5 to 15 words, test() 256."""
import numpy as np

START, END, UNK = 0, 1, 2
_FREQUENT = 200


def _reader(count, seed, dict_size):
    def reader():
        rng = np.random.RandomState(seed)
        top = min(dict_size - 1, 3 + _FREQUENT)
        for _ in range(count):
            words = rng.randint(3, top, size=rng.randint(5, 16)).tolist()
            target = [w + 1 for w in reversed(words)]
            yield [START] + words + [END], [START] + target, target + [END]
    return reader


def train(dict_size):
    return _reader(2048, 11, dict_size)


def test(dict_size):
    return _reader(256, 13, dict_size)


def get_dict(dict_size, reverse=True):
    """(source dict, target dict): id -> word with reverse, else word -> id."""
    words = ["<s>", "<e>", "<unk>"] + ["w%d" % i for i in range(3, dict_size)]
    if reverse:
        d = dict(enumerate(words))
    else:
        d = {w: i for i, w in enumerate(words)}
    return d, dict(d)
