import torch


def reference(q, k, v, batch, heads, kv_heads, seq, head_dim, scale):
    """Causal self-attention of a prefill (all seq tokens of each sequence at once), GQA:

        o[b, h, i] = sum_{j <= i} softmax_j(scale * q[b, h, i] . k[b, g, j]) v[b, g, j],
        g = h // (heads // kv_heads)

    q, o: [batch, heads, seq, head_dim]; k, v: [batch, kv_heads, seq, head_dim]."""
    group = heads // kv_heads
    kk = k.repeat_interleave(group, dim=1)
    vv = v.repeat_interleave(group, dim=1)
    scores = torch.matmul(q, kk.transpose(-1, -2)) * scale
    mask = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(mask, float("-inf"))
    p = torch.softmax(scores, dim=-1)
    return torch.matmul(p, vv)
