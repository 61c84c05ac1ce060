import math

import torch


def reference(x, rows, cols):
    """GELU, tanh approximation, computed in the dtype of x (the harness passes float32
    for this fp16 task)."""
    assert x.shape == (rows, cols)
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + torch.tanh(inner))
