import torch


def reference(x, rows, cols):
    """Inclusive prefix sum of each row, in the dtype of x (the harness passes float64
    for this fp32 task)."""
    assert x.shape == (rows, cols)
    return torch.cumsum(x, dim=-1)
