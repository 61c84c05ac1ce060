import torch


def reference(x, weight, n, cin, cout, h, w):
    """3x3 convolution, stride 1, zero padding 1, no bias, computed in the dtype of x (the
    harness passes float64 for this fp32 task)."""
    assert x.shape == (n, cin, h, w) and weight.shape == (cout, cin, 3, 3)
    return torch.nn.functional.conv2d(x, weight, bias=None, stride=1, padding=1)
