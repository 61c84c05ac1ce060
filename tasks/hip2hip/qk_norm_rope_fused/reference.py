import torch

THETA = 1.0e6


def reference(qkv, q_weight, k_weight, cos_sin_cache, positions, tokens, q_heads, kv_heads, head_dim, eps):
    """Per-head RMSNorm of the query and key heads, then the NeoX rotary embedding, in the
    floating dtype given (the fp16 tensors arrive as fp32, the fp32 cache as fp64).
    Returns (q_out [tokens, q_heads, head_dim], k_out [tokens, kv_heads, head_dim]) in fp16."""
    dt = cos_sin_cache.dtype
    half = head_dim // 2
    x = qkv.to(dt).view(tokens, q_heads + 2 * kv_heads, head_dim)
    cs = cos_sin_cache[positions.long()]                    # [tokens, head_dim]
    cos = cs[:, None, :half]
    sin = cs[:, None, half:]

    def norm_rope(h, w):
        y = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps) * w.to(dt)
        y1, y2 = y[..., :half], y[..., half:]
        return torch.cat([y1 * cos - y2 * sin, y2 * cos + y1 * sin], dim=-1).to(torch.float16)

    return (norm_rope(x[:, :q_heads], q_weight),
            norm_rope(x[:, q_heads:q_heads + kv_heads], k_weight))


def make_inputs(config, generator, device):
    """qkv: N(0, 1), the key heads scaled by 4 (fp16). cos_sin_cache: the fp32 table of the
    model (theta 1e6), the same for every seed."""
    tokens, qh, kvh, d = (int(config[n]) for n in ("tokens", "q_heads", "kv_heads", "head_dim"))
    max_pos = int(config["max_position"])
    qkv = torch.randn(tokens, qh + 2 * kvh, d, generator=generator, device=device)
    qkv[:, qh:qh + kvh] *= 4.0
    inv_freq = THETA ** (-torch.arange(0, d, 2, dtype=torch.float64, device=device) / d)
    angles = torch.arange(max_pos, dtype=torch.float64, device=device)[:, None] * inv_freq[None, :]
    cache = torch.cat([angles.cos(), angles.sin()], dim=-1).to(torch.float32)
    return {"qkv": qkv.reshape(tokens, -1).to(torch.float16), "cos_sin_cache": cache}
