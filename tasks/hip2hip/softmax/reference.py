import torch


def reference(x, rows, cols):
    """Softmax over the last dimension, computed in the dtype of x (the harness passes
    float64 for this fp32 task)."""
    assert x.shape == (rows, cols)
    m = x.amax(dim=-1, keepdim=True)
    e = torch.exp(x - m)
    return e / e.sum(dim=-1, keepdim=True)
