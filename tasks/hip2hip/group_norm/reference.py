import torch


def reference(x, weight, bias, batch, channels, height, width, groups, eps):
    """GroupNorm in the dtype it is given (the harness passes float64 for this fp32 task)."""
    assert x.shape == (batch, channels, height, width)
    xg = x.reshape(batch, groups, -1)
    mean = xg.mean(dim=-1, keepdim=True)
    var = ((xg - mean) ** 2).mean(dim=-1, keepdim=True)
    y = ((xg - mean) / torch.sqrt(var + eps)).reshape(batch, channels, height, width)
    return y * weight[None, :, None, None] + bias[None, :, None, None]
