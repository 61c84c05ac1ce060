import torch.nn.functional as F


def reference(x, batch, channels, in_h, in_w, out_h, out_w):
    """Bicubic resize (A = -0.75, align_corners=False, clamped borders)."""
    return F.interpolate(x, size=(out_h, out_w), mode="bicubic", align_corners=False)
