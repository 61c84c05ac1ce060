import torch


def reference(x, batch, channels, height, width, upscale):
    """Pixel shuffle by upscale (an exact copy of the values)."""
    assert x.shape == (batch, channels * upscale * upscale, height, width)
    return torch.nn.functional.pixel_shuffle(x, upscale)
