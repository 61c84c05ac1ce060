import torch


def reference(x, weight, bias, rows, cols, eps):
    """LayerNorm forward over the last dimension, computed in the dtype of the inputs
    (the harness passes float32 for this fp16 task). Returns (y, mean, rstd)."""
    assert x.shape == (rows, cols)
    mean = x.mean(dim=-1)
    centered = x - mean[:, None]
    var = (centered * centered).mean(dim=-1)
    rstd = torch.rsqrt(var + eps)
    y = centered * rstd[:, None] * weight + bias
    return y, mean, rstd


def make_inputs(config, generator, device):
    """x: per row, shift + scale * N(0, 1), so mean and rstd vary between rows."""
    rows, cols = int(config["rows"]), int(config["cols"])
    z = torch.randn(rows, cols, generator=generator, device=device)
    shift = torch.randn(rows, 1, generator=generator, device=device)
    scale = torch.exp(0.5 * torch.randn(rows, 1, generator=generator, device=device))
    return {"x": (shift + scale * z).to(torch.float16)}
