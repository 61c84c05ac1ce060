import torch


def reference(x, segments, length):
    """Sum of each row, computed in the dtype of x (the harness passes float64 for this
    fp32 task)."""
    assert x.shape == (segments, length)
    return x.sum(dim=1)
