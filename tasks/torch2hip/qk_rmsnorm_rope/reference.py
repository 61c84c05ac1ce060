import torch


def _rms_norm(x, weight, eps):
    # Qwen3RMSNorm: statistics in fp32, normalised value cast back to the input dtype, then
    # the weight product in that dtype.
    xf = x.to(torch.float32) if x.dtype == torch.float16 else x
    xf = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    return weight * xf.to(x.dtype)


def _rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def reference(q, k, q_weight, k_weight, cos_sin_cache, positions, tokens, q_heads, kv_heads, head_dim,
              max_pos, eps):
    """Per-head RMSNorm of q and k (Qwen3's q_norm / k_norm), then the rotate-half (NeoX) rotary
    embedding at each token's position, as Hugging Face's Qwen3 attention writes it, with the
    cos / sin rows gathered from a vLLM-style cache (cos in the first half of a row, sin in the
    second). Returns (q_out, k_out).

    Called with the declared fp16 tensors this is the eager baseline (fp32 statistics, fp16
    products); called with fp32 upcasts it gives the expected output, rounded once by the
    comparison."""
    cs = cos_sin_cache[positions]                           # [tokens, head_dim]
    cos, sin = cs.chunk(2, dim=-1)
    cos = torch.cat((cos, cos), dim=-1).unsqueeze(1).to(q.dtype)  # [tokens, 1, head_dim]
    sin = torch.cat((sin, sin), dim=-1).unsqueeze(1).to(q.dtype)
    qn = _rms_norm(q, q_weight, eps)
    kn = _rms_norm(k, k_weight, eps)
    return qn * cos + _rotate_half(qn) * sin, kn * cos + _rotate_half(kn) * sin


def make_inputs(config, generator, device):
    """The cos / sin cache of Qwen3 (rope theta 1e6) for positions [0, max_pos), angles in
    fp64, rounded to fp16 as vLLM stores it; positions drawn uniformly in [0, max_pos) (tokens
    of many sequences batched together, each at its own position)."""
    tokens, head_dim = int(config["tokens"]), int(config["head_dim"])
    max_pos = int(config["max_pos"])
    inv_freq = 1.0e6 ** (-torch.arange(0, head_dim, 2, device=device, dtype=torch.float64) / head_dim)
    angles = torch.arange(max_pos, device=device, dtype=torch.float64)[:, None] * inv_freq[None, :]
    cache = torch.cat((angles.cos(), angles.sin()), dim=-1).to(torch.float16)
    positions = torch.randint(0, max_pos, (tokens,), generator=generator, device=device)
    return {"cos_sin_cache": cache, "positions": positions}
