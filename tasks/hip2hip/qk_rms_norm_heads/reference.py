import torch


def _rms(v, w, eps):
    return v * torch.rsqrt((v * v).mean(dim=-1, keepdim=True) + eps) * w


def reference(qkv, q_weight, k_weight, tokens, q_heads, kv_heads, head_dim, eps):
    """Per-head RMSNorm of the query and key heads of a packed QKV tensor, in the dtype it
    is given (the harness passes float32 for this fp16 task). Returns (q, k)."""
    assert qkv.shape == (tokens, (q_heads + 2 * kv_heads) * head_dim)
    heads = qkv.view(tokens, q_heads + 2 * kv_heads, head_dim)
    q = heads[:, :q_heads]
    k = heads[:, q_heads:q_heads + kv_heads]
    return _rms(q, q_weight, eps), _rms(k, k_weight, eps)
