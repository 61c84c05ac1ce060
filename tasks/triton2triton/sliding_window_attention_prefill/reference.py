import torch


def reference(q, k, v, batch, seq, heads, kv_heads, head_dim, window, sm_scale):
    """Sliding-window causal GQA attention, computed in the dtype it is given (the harness
    upcasts the fp16 inputs to fp32). Query i sees keys i - window < j <= i. Processed in
    query chunks to bound the memory of the score matrix."""
    group = heads // kv_heads
    qh = q.permute(0, 2, 1, 3)                                        # [b, h, s, d]
    kh = k.permute(0, 2, 1, 3).repeat_interleave(group, dim=1)
    vh = v.permute(0, 2, 1, 3).repeat_interleave(group, dim=1)
    out = torch.empty_like(qh)
    chunk = 512
    for i0 in range(0, seq, chunk):
        i1 = min(i0 + chunk, seq)
        j0 = max(0, i0 - window + 1)
        s = torch.matmul(qh[:, :, i0:i1], kh[:, :, j0:i1].transpose(-1, -2)) * sm_scale
        i = torch.arange(i0, i1, device=q.device)[:, None]
        j = torch.arange(j0, i1, device=q.device)[None, :]
        visible = (j <= i) & (i - j < window)
        s = s.masked_fill(~visible, float("-inf"))
        out[:, :, i0:i1] = torch.matmul(torch.softmax(s, dim=-1), vh[:, :, j0:i1])
    return out.permute(0, 2, 1, 3)
