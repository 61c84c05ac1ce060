import torch


def reference(qkv, q_weight, k_weight, tokens, q_heads, kv_heads, head_dim, eps):
    """Per-head RMSNorm of the query and key heads of a fused qkv tensor, computed in the
    dtype it is given (the harness upcasts the fp16 inputs to fp32). Returns (q_out, k_out)."""
    x = qkv.reshape(tokens, q_heads + 2 * kv_heads, head_dim)
    q = x[:, :q_heads]
    k = x[:, q_heads:q_heads + kv_heads]

    def rms(t, w):
        return t * torch.rsqrt((t * t).mean(dim=-1, keepdim=True) + eps) * w

    return rms(q, q_weight), rms(k, k_weight)
