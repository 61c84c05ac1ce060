import torch


def reference(x, weight, bias, n, c, h, w, ksize):
    """Depthwise convolution (groups = c), stride 1, zero padding ksize // 2, plus a
    per-channel bias, computed in the dtype of the inputs (the harness passes float32 for
    this fp16 task)."""
    assert x.shape == (n, c, h, w) and weight.shape == (c, ksize, ksize) and bias.shape == (c,)
    return torch.nn.functional.conv2d(x, weight.view(c, 1, ksize, ksize), bias=bias, stride=1,
                                      padding=ksize // 2, groups=c)
