import torch


def reference(x, weight, rows, cols, eps):
    """RMSNorm over the last dimension in the dtype it is given (the harness passes
    float32 for this fp16 task)."""
    assert x.shape == (rows, cols) and weight.shape == (cols,)
    inv_rms = torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + eps)
    return x * inv_rms * weight
