import torch.nn.functional as F


def reference(x, batch, channels, height, width, upscale):
    """Depth-to-space by the factor upscale (F.pixel_shuffle). Called with the declared fp16
    tensor this is the eager baseline; called with the fp32 upcast it gives the expected
    output."""
    return F.pixel_shuffle(x, upscale)
