import torch


def reference(x, residual, weight, bias, rows, cols, eps):
    """Residual add then LayerNorm over the last dimension, computed in the dtype it is given
    (the harness passes float32 for this fp16 task). Returns (residual_out, y)."""
    assert x.shape == (rows, cols) and residual.shape == (rows, cols)
    h = x + residual
    mean = h.mean(dim=-1, keepdim=True)
    centered = h - mean
    var = (centered * centered).mean(dim=-1, keepdim=True)
    y = centered * torch.rsqrt(var + eps) * weight + bias
    return h, y


def make_inputs(config, generator, device):
    """residual: per row, shift + scale * N(0, 1), so the rows differ in mean and spread."""
    rows, cols = int(config["rows"]), int(config["cols"])
    shift = torch.randn(rows, 1, generator=generator, device=device)
    scale = torch.exp(0.5 * torch.randn(rows, 1, generator=generator, device=device))
    z = torch.randn(rows, cols, generator=generator, device=device)
    return {"residual": (shift + scale * z).to(torch.float16)}
