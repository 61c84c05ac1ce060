import torch


def reference(x, rows, cols):
    """Inclusive prefix sum along the last dimension, computed in the dtype it is given (the
    harness passes float64 for this fp32 task)."""
    assert x.shape == (rows, cols)
    return torch.cumsum(x, dim=-1)
