import torch


def reference(w, x, n, k):
    """y = w @ x in the dtype it is given (the harness passes float32 for this fp16 task)."""
    assert w.shape == (n, k) and x.shape == (k,)
    return w @ x
