import torch


def reference(x, rows, vocab):
    """Log-softmax over the last dimension, computed in the dtype it is given (the harness
    passes float64 for this fp32 task)."""
    assert x.shape == (rows, vocab)
    return torch.log_softmax(x, dim=-1)
