import torch


def reference(x, n, c, h, w):
    """nn.MaxPool2d(3, stride=2, padding=1) in the dtype of x (the harness passes float64
    for this fp32 task; the result is exact)."""
    assert x.shape == (n, c, h, w)
    return torch.nn.functional.max_pool2d(x, kernel_size=3, stride=2, padding=1)
