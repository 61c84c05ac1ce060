import torch


def reference(x, batch, channels, height, width, pad):
    """Reflection padding by pad on all four sides (an exact copy of the values)."""
    assert x.shape == (batch, channels, height, width)
    return torch.nn.functional.pad(x, (pad, pad, pad, pad), mode="reflect")
