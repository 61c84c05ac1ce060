import torch


def reference(x, batch, channels, height, width):
    """Every row of the NCHW tensor reversed (horizontal flip)."""
    return torch.flip(x, dims=[3])
