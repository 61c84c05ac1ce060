import torch


def reference(q, k, v, cu_seqlens, total_tokens, num_seqs, heads, kv_heads, head_dim, max_seqlen, sm_scale):
    """Causal grouped-query attention within each packed sequence, computed in the dtype it is
    given (the harness upcasts the fp16 inputs to fp32). The scores are materialised a chunk
    of queries at a time (at most 2**26 scores per chunk)."""
    group = heads // kv_heads
    out = torch.empty_like(q)
    bounds = cu_seqlens.tolist()
    for i in range(num_seqs):
        s, e = int(bounds[i]), int(bounds[i + 1])
        n = e - s
        ks, vs = k[s:e], v[s:e]                                   # [n, kv_heads, head_dim]
        cq = max(1, 2**26 // (heads * n))
        for q0 in range(0, n, cq):
            q1 = min(n, q0 + cq)
            qc = q[s + q0:s + q1].reshape(q1 - q0, kv_heads, group, head_dim)
            sc = torch.einsum("qhgd,khd->hgqk", qc, ks) * sm_scale
            rows = torch.arange(q0, q1, device=q.device)[:, None]
            cols = torch.arange(n, device=q.device)[None, :]
            sc = sc.masked_fill(cols > rows, float("-inf"))
            p = torch.softmax(sc, dim=-1)
            out[s + q0:s + q1] = torch.einsum("hgqk,khd->qhgd", p, vs).reshape(q1 - q0, heads, head_dim)
    return out


def make_inputs(config, generator, device):
    """cu_seqlens for num_seqs lengths adding up to total_tokens: one is max_seqlen, the others
    split the rest in proportion to evenly spaced quantiles of a log-normal (sigma 0.75), each
    kept in [1, max_seqlen] (the rounding remainder goes to the sequences with room). The
    lengths are fixed by the config; the seed draws their order."""
    n = int(config["num_seqs"])
    total = int(config["total_tokens"])
    longest = int(config["max_seqlen"])
    assert n * longest >= total and longest + n - 1 <= total
    rest = total - longest
    lens = []
    if n > 1:
        w = torch.exp(0.75 * torch.special.ndtri((torch.arange(n - 1, dtype=torch.float64) + 0.5) / (n - 1)))
        raw = (w / w.sum() * rest).floor().long().clamp(1, longest).tolist()
        left = rest - sum(raw)
        i = 0
        while left != 0:                          # hand out (or take back) the remainder
            j = i % (n - 1)
            if left > 0 and raw[j] < longest:
                step = min(left, longest - raw[j])
                raw[j] += step
                left -= step
            elif left < 0 and raw[j] > 1:
                step = min(-left, raw[j] - 1)
                raw[j] -= step
                left += step
            i += 1
        lens = raw
    lens.append(longest)
    lens = [lens[i] for i in torch.randperm(n, generator=generator, device=device).tolist()]
    cu = [0]
    for length in lens:
        cu.append(cu[-1] + length)
    assert cu[-1] == total and max(lens) == longest and min(lens) >= 1
    return {"cu_seqlens": torch.tensor(cu, dtype=torch.int32, device=device)}
