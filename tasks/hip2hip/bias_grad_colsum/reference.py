import torch


def reference(dy, rows, cols):
    """Column sums of dy, accumulated in fp64 and returned in the dtype of dy (the harness
    passes float32 for this fp16 task)."""
    assert dy.shape == (rows, cols)
    return dy.sum(dim=0, dtype=torch.float64).to(dy.dtype)
