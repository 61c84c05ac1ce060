import math

import torch

THETA = 500000.0


def _rotate(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


def reference(q, k, cos_sin_cache, positions, tokens, heads, kv_heads, head_dim, max_position):
    """NeoX rotary embedding of q and k, in the dtype it is given (float32 activations and a
    float64 cache from the harness)."""
    half = head_dim // 2
    row = cos_sin_cache[positions.long()]                   # [tokens, head_dim]
    cos, sin = row[:, None, :half], row[:, None, half:]
    return _rotate(q.to(row.dtype), cos, sin), _rotate(k.to(row.dtype), cos, sin)


def make_inputs(config, generator, device):
    """The real Llama-3 table: cos / sin of pos * theta^(-2i / head_dim) (deterministic: it
    does not depend on the seed)."""
    head_dim, max_position = int(config["head_dim"]), int(config["max_position"])
    half = head_dim // 2
    inv_freq = THETA ** (-torch.arange(0, half, dtype=torch.float64, device=device) * 2.0 / head_dim)
    ang = torch.arange(max_position, dtype=torch.float64, device=device)[:, None] * inv_freq[None, :]
    cache = torch.cat((torch.cos(ang), torch.sin(ang)), dim=1).to(torch.float32)
    return {"cos_sin_cache": cache}
