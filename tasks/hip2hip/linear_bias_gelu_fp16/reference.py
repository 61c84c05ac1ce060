import torch


def reference(x, w, bias, m, n, k):
    """y = gelu(x @ w^T + bias) with the exact erf GELU, in the dtype it is given (the
    harness passes float32 for this fp16 task)."""
    assert x.shape == (m, k) and w.shape == (n, k) and bias.shape == (n,)
    return torch.nn.functional.gelu(x @ w.t() + bias[None, :], approximate="none")
