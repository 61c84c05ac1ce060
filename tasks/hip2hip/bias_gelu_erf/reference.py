import math

import torch


def reference(x, bias, tokens, cols):
    """Exact GELU of x + bias (bias broadcast over rows), in the dtype of x (the harness
    passes float32 for this fp16 task)."""
    assert x.shape == (tokens, cols) and bias.shape == (cols,)
    v = x + bias
    return 0.5 * v * (1.0 + torch.erf(v * (1.0 / math.sqrt(2.0))))
