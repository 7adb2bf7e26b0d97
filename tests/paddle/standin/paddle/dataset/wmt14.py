"""wmt14 (French to English) as the real reader yields it: (src_ids, trg_ids, trg_ids_next),
the source sentence with <s> and <e> around it, the target after <s>, and the target then
<e>; ids 0, 1 and 2 are <s>, <e> and <unk> in both dictionaries of `dict_size` words, the
words drawn from the 200 most frequent (as real text mostly is). The signal: a target
sentence is as long as its source and starts with the source's first word; each next word
follows from the one before by a fixed rule (a grammar of one rule), which the book's
decoder can learn from its input word alone (its memory starts from the encodings in the
batch's order while its steps run longest sentence first: Fluid's book leaves
need_reorder off). train() yields 2048 sentence pairs of 5 to 15 words, test() 256."""
import numpy as np

START, END, UNK = 0, 1, 2
_FREQUENT = 200


def _reader(count, seed, dict_size):
    def reader():
        rng = np.random.RandomState(seed)
        frequent = min(dict_size - 3, _FREQUENT)
        for _ in range(count):
            words = rng.randint(3, 3 + frequent, size=rng.randint(5, 16)).tolist()
            target = [words[0]]
            while len(target) < len(words):
                target.append(3 + (target[-1] * 7 + 3) % frequent)
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
