import torch.nn.functional as F


def reference(x, batch, channels, in_h, in_w, out_h, out_w):
    """Adaptive average pooling of each plane to an out_h x out_w grid."""
    return F.adaptive_avg_pool2d(x, (out_h, out_w))
