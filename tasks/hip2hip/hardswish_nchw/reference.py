import torch


def reference(x, batch, channels, height, width):
    """Hard-swish x * relu6(x + 3) / 6, in the dtype of x (the harness passes float32 for
    this fp16 task)."""
    assert x.shape == (batch, channels, height, width)
    return x * torch.clamp(x + 3.0, min=0.0, max=6.0) / 6.0
