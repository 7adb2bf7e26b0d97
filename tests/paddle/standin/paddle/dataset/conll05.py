"""conll05 (semantic role labelling) with the real data's sizes: a word dict of 44068 words,
a verb dict of 3162, 59 labels (B- and I- of 29 roles, then O, numbered as the real reader
numbers them: B-role 2k, I-role 2k + 1, O 58). test() yields 1024 sentences of 10 to 40 words
as the real reader does: (words, ctx_n2, ctx_n1, ctx_0, ctx_p1, ctx_p2, predicate, mark,
labels), the five context words and the predicate repeated for every position, mark 1 within
two words of the verb. The signal: the verb is B-V, the two words before it are A0's chunk
and the two after it A1's (as many as the sentence has), the rest O. get_embedding() writes
a word-vector file in the real one's layout (a 16-byte header, then float32 [words, 32]) and
returns its path."""
import os
import tempfile

import numpy as np

_WORDS = 44068
_VERBS = 3162
_ROLES = ["A0", "A1", "A2", "A3", "A4", "A5", "AA", "AM", "AM-ADV", "AM-CAU", "AM-DIR", "AM-DIS", "AM-EXT",
          "AM-LOC", "AM-MNR", "AM-MOD", "AM-NEG", "AM-PNC", "AM-PRD", "AM-REC", "AM-TM", "AM-TMP", "C-A0", "C-A1",
          "R-A0", "R-A1", "R-A2", "R-AM-LOC", "V"]
_EMBEDDING_WIDTH = 32
_embedding_path = None


def get_dict():
    words = {"word%d" % i: i for i in range(_WORDS)}
    verbs = {"verb%d" % i: i for i in range(_VERBS)}
    return words, verbs, _label_ids()


def get_embedding():
    global _embedding_path
    if _embedding_path is None:
        path = os.path.join(tempfile.mkdtemp(prefix="conll05-"), "emb")
        with open(path, "wb") as f:
            f.write(b"\0" * 16)
            np.random.RandomState(5).uniform(-0.1, 0.1, (_WORDS, _EMBEDDING_WIDTH)).astype(np.float32).tofile(f)
        _embedding_path = path
    return _embedding_path


def _label_ids():
    ids = {}
    for k, role in enumerate(_ROLES):
        ids["B-" + role] = 2 * k
        ids["I-" + role] = 2 * k + 1
    ids["O"] = 2 * len(_ROLES)
    return ids


def _chunk(labels, label_ids, role, first, last):
    for at in range(first, last + 1):
        labels[at] = label_ids[("B-" if at == first else "I-") + role]


def test():
    label_ids = _label_ids()

    def reader():
        rng = np.random.RandomState(3)
        for _ in range(1024):
            length = int(rng.randint(10, 41))
            words = [int(w) for w in rng.randint(1, _WORDS, size=length)]
            verb = int(rng.randint(0, length))
            predicate = int(rng.randint(_VERBS))
            labels = [label_ids["O"]] * length
            _chunk(labels, label_ids, "V", verb, verb)
            if verb > 0:
                _chunk(labels, label_ids, "A0", max(0, verb - 2), verb - 1)
            if verb < length - 1:
                _chunk(labels, label_ids, "A1", verb + 1, min(length - 1, verb + 2))
            context = [words[at] if 0 <= at < length else 0 for at in range(verb - 2, verb + 3)]
            mark = [1 if abs(at - verb) <= 2 else 0 for at in range(length)]
            yield (words,) + tuple([c] * length for c in context) + ([predicate] * length, mark, labels)
    return reader
