"""paddle.v2, the part the book's tests reach: dataset.common.download (dataset/common.py)."""
