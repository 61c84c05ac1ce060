import torch


def reference(x, y, pos_weight, batch, classes):
    """Per-element BCE with logits and pos_weight, and its derivative in x, in the dtype it is
    given (float32 x, y and float64 pos_weight for this task: everything is promoted to
    float64). Returns (loss, dlogit), both [batch, classes]."""
    x = x.to(pos_weight.dtype)
    y = y.to(pos_weight.dtype)
    w = 1.0 + (pos_weight[None, :] - 1.0) * y
    sp = torch.clamp(-x, min=0.0) + torch.log1p(torch.exp(-torch.abs(x)))   # softplus(-x)
    loss = (1.0 - y) * x + w * sp
    dlogit = (1.0 - y) - w * torch.sigmoid(-x)
    return loss, dlogit
