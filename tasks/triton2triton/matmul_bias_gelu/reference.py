import math

import torch


def reference(x, w, b, m, n, k):
    """gelu_tanh(x @ w^T + b), computed in the dtype it is given (fp16/bf16 are upcast to
    fp32 first); the result has x's dtype."""
    xf = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    z = xf @ w.to(xf.dtype).t() + b.to(xf.dtype)
    c = math.sqrt(2.0 / math.pi)
    y = 0.5 * z * (1.0 + torch.tanh(c * (z + 0.044715 * z * z * z)))
    return y.to(x.dtype)
