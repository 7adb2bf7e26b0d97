"""Synthetic word2vec data with a known answer: the next word after (w1, w2, w3) is
(w1 + 2 w2 + 3 w3) mod 20. Writes w1, w2, w3, label (int64 [N, 1]) as .npy for the whole
set and for each of two equal trainer shards (w1_0.npy, w1_1.npy, ...).

usage: /usr/bin/python3 data.py OUT_DIR [N]      (needs numpy)
"""
import os
import sys

import numpy as np

out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 256
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(2)
words = rng.integers(0, 20, size=(n, 3)).astype(np.int64)
data = {"w1": words[:, :1], "w2": words[:, 1:2], "w3": words[:, 2:3],
        "label": ((words[:, 0] + 2 * words[:, 1] + 3 * words[:, 2]) % 20).reshape(n, 1).astype(np.int64)}
for name, value in data.items():
    np.save(os.path.join(out, name + ".npy"), value)
    for k in range(2):
        np.save(os.path.join(out, "%s_%d.npy" % (name, k)), value[k * n // 2:(k + 1) * n // 2])
