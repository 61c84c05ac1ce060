import torch.nn.functional as F


def reference(x, batch, channels, height, width, pad):
    """Reflection padding by pad on all four sides of each plane (nn.ReflectionPad2d(pad)).
    Called with the declared fp32 tensor this is the eager baseline; called with the fp64
    upcast it gives the expected output."""
    return F.pad(x, (pad, pad, pad, pad), mode="reflect")
