import torch


def reference(x, w, x_scale, w_scale, m, n, k):
    """y = (x @ w^T) * x_scale[:, None] * w_scale[None, :]. The harness passes the int8
    codes unchanged and the scales as float64; the products are summed in float64, which is
    exact for these sizes (|sum| < 2^31 < 2^53)."""
    assert x.shape == (m, k) and w.shape == (n, k) and x_scale.shape == (m,) and w_scale.shape == (n,)
    acc = x.to(x_scale.dtype) @ w.to(x_scale.dtype).t()
    return acc * x_scale[:, None] * w_scale[None, :]
