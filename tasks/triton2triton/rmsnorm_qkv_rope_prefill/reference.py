import torch


def reference(x, norm_weight, w_qkv, cos, sin, tokens, hidden, q_heads, kv_heads, head_dim, eps):
    """RMSNorm, fused QKV projection and NeoX-style RoPE on q and k, computed in the dtype it
    is given (the harness upcasts fp16 to fp32 and fp32 to fp64). Returns (q, k, v)."""
    dt = torch.promote_types(x.dtype, cos.dtype)
    x, norm_weight, w_qkv, cos, sin = (t.to(dt) for t in (x, norm_weight, w_qkv, cos, sin))
    xn = x * torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + eps) * norm_weight
    qkv = (xn @ w_qkv.t()).reshape(tokens, q_heads + 2 * kv_heads, head_dim)
    q = qkv[:, :q_heads]
    k = qkv[:, q_heads:q_heads + kv_heads]
    v = qkv[:, q_heads + kv_heads:]
    half = head_dim // 2
    c = cos[:, None, :]
    s = sin[:, None, :]

    def rope(u):
        u1, u2 = u[..., :half], u[..., half:]
        return torch.cat([u1 * c - u2 * s, u2 * c + u1 * s], dim=-1)

    return rope(q), rope(k), v.contiguous()
