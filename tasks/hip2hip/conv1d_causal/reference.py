import torch


def reference(x, weight, bias, batch, dim, seqlen):
    """Depthwise causal conv1d of width 4 (left zero padding of 3) + bias, then SiLU,
    computed in the dtype of the inputs (the harness passes float32 for this fp16 task)."""
    assert x.shape == (batch, dim, seqlen) and weight.shape == (dim, 4) and bias.shape == (dim,)
    xp = torch.nn.functional.pad(x, (3, 0))
    z = torch.nn.functional.conv1d(xp, weight.unsqueeze(1), bias, groups=dim)
    return torch.nn.functional.silu(z)
