import torch


def reference(x, w, a, b, m, n, k, r, scale):
    """x @ w^T + scale * ((x @ a^T) @ b^T), computed in the dtype it is given (fp16 inputs are
    upcast to fp32 first); the result has x's dtype."""
    assert x.shape == (m, k) and w.shape == (n, k) and a.shape == (r, k) and b.shape == (n, r)
    xf = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    base = xf @ w.to(xf.dtype).t()
    low_rank = (xf @ a.to(xf.dtype).t()) @ b.to(xf.dtype).t()
    return (base + scale * low_rank).to(x.dtype)
