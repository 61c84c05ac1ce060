import torch.nn.functional as F


def reference(x, rows, dim, eps):
    """L2-normalise each row of x (F.normalize over the last dimension).

    Called with the declared fp16 tensor this is the eager baseline (fp16 norm, clamp_min,
    broadcast division); called with the fp32 upcast it gives the expected output."""
    return F.normalize(x, p=2.0, dim=-1, eps=eps)
