def reference(qkv, batch, seq, heads, head_dim):
    """Split and permute; returns contiguous (q, k, v), each [batch, heads, seq, head_dim]."""
    t = qkv.view(batch, seq, 3, heads, head_dim).permute(2, 0, 3, 1, 4)
    return t[0].contiguous(), t[1].contiguous(), t[2].contiguous()
