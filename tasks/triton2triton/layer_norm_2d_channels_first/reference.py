import torch


def reference(x, weight, bias, n, c, h, w, eps):
    """LayerNorm over the channel dimension of an NCHW tensor, computed in the dtype it is
    given (the harness passes float32 for this fp16 task)."""
    assert x.shape == (n, c, h, w)
    mean = x.mean(dim=1, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(dim=1, keepdim=True)
    y = centered * torch.rsqrt(var + eps)
    return y * weight.reshape(1, c, 1, 1) + bias.reshape(1, c, 1, 1)


def make_inputs(config, generator, device):
    """x: per (sample, pixel), shift + scale * N(0, 1)."""
    n, c, h, w = (int(config[k]) for k in ("n", "c", "h", "w"))
    shift = torch.randn(n, 1, h, w, generator=generator, device=device)
    scale = torch.exp(0.5 * torch.randn(n, 1, h, w, generator=generator, device=device))
    z = torch.randn(n, c, h, w, generator=generator, device=device)
    return {"x": (shift + scale * z).to(torch.float16)}
