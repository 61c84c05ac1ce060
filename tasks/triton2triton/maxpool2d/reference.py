import torch


def reference(x, batch, channels, height, width, kernel, stride, padding, out_h, out_w):
    """Max pooling of the NCHW input (exact in any floating dtype)."""
    y = torch.nn.functional.max_pool2d(x, kernel_size=kernel, stride=stride, padding=padding)
    assert y.shape == (batch, channels, out_h, out_w)
    return y
