import torch


def reference(x, tokens, hidden, inv_scale):
    """round-half-to-even(x * inv_scale), saturated to [-128, 127], as int8. x * inv_scale
    is exact in fp32 for fp16 x and inv_scale = 42.5 (and in the float32 the harness passes)."""
    assert x.shape == (tokens, hidden)
    return torch.clamp(torch.round(x * inv_scale), -128.0, 127.0).to(torch.int8)
