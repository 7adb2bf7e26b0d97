"""paddle.dataset for Paddle's book tests, with synthetic data: nothing downloads here.

Each module yields samples of the real dataset's shape and types, drawn from a fixed seed
so that every run sees the same data, and made learnable (a simple rule links each input
to its label) so that the book's training loops reach their thresholds by learning, not by
chance. The sample counts are smaller than the real ones, to keep the runs short.
"""
from paddle.dataset import cifar, conll05, imdb, imikolov, mnist, movielens, uci_housing, wmt14  # noqa: F401
