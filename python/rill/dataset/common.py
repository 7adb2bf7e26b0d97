"""Where rill.dataset finds a dataset's files."""
import os


def data_home():
    return os.environ.get("RILL_DATASET_HOME", os.path.join(os.path.expanduser("~"), ".cache", "paddle", "dataset"))


def dataset_file(module, name):
    """The path of `name` of dataset `module`, which must exist."""
    path = os.path.join(data_home(), module, name)
    if not os.path.exists(path):
        raise IOError("rill.dataset.%s: %s is not there; Rill downloads nothing: put the dataset's file there (or "
                      "point RILL_DATASET_HOME at a directory holding %s/%s)" % (module, path, module, name))
    return path
