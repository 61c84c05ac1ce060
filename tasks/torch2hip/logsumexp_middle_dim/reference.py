import torch


def reference(x, batch, length, channels):
    """Log-sum-exp of x over its middle axis (dim 1), computed stably by torch.logsumexp.

    Called with the declared fp32 tensor this is the eager baseline; called with the fp64
    upcast it gives the expected output."""
    return torch.logsumexp(x, dim=1)
