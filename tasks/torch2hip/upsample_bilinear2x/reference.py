import torch.nn.functional as F


def reference(x, batch, channels, height, width):
    """2x bilinear upsampling (align_corners=False) of an NCHW tensor. Called with the
    declared fp16 tensor this is the eager baseline; called with the fp32 upcast it gives the
    expected output."""
    return F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
