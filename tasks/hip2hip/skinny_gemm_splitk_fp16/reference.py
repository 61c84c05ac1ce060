import torch


def reference(x, w, m, n, k):
    """y = x @ w^T, in the dtype it is given (the harness passes float32 for this fp16 task)."""
    assert x.shape == (m, k) and w.shape == (n, k)
    return x @ w.t()
