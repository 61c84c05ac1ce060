import torch


def reference(a, b, rows, d1, d2):
    """a and b side by side along the last dimension (an exact copy of the values)."""
    assert a.shape == (rows, d1) and b.shape == (rows, d2)
    return torch.cat([a, b], dim=-1)
