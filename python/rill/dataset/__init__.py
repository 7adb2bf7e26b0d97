"""rill.dataset: the datasets Fluid's book trains on, read from the files Paddle keeps for
them, as paddle.dataset's readers give them.

Rill downloads nothing. Each module reads its dataset's original files from
$RILL_DATASET_HOME/<module>/ (default ~/.cache/paddle/dataset/<module>/, where Paddle keeps
what it downloaded), and a missing file is an error naming the path to put it at:

    uci_housing/housing.data
    mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz
    cifar/cifar-10-python.tar.gz, cifar/cifar-100-python.tar.gz
    imikolov/simple-examples.tgz

Each reader creator returns a reader (rill.reader's kind) of the samples Paddle's gives.
"""
from rill.dataset import cifar, imikolov, mnist, uci_housing  # noqa: F401

__all__ = ["cifar", "imikolov", "mnist", "uci_housing"]
