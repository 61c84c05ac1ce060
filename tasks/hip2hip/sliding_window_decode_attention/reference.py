import torch


def reference(q, k_cache, v_cache, seq_lens, batch, heads, kv_heads, max_len, head_dim, window, scale):
    """Decode attention with a sliding window (Mistral / Phi-3 / Gemma-2 local layers), GQA:
    sequence b holds seq_lens[b] cached tokens (positions 0..L-1, the newest last); its
    query attends to the last min(L, window) of them:

        out[b, h] = softmax_j(scale * q[b, h] . k_cache[b, g, j]) v_cache[b, g, j],
        j in [max(0, L - window), L),  g = h // (heads // kv_heads)"""
    group = heads // kv_heads
    outs = []
    for b in range(batch):
        L = int(seq_lens[b])
        start = max(0, L - window)
        kk = k_cache[b, :, start:L].repeat_interleave(group, dim=0)   # [heads, n, head_dim]
        vv = v_cache[b, :, start:L].repeat_interleave(group, dim=0)
        s = torch.einsum("hd,hnd->hn", q[b], kk) * scale
        p = torch.softmax(s, dim=-1)
        outs.append(torch.einsum("hn,hnd->hd", p, vv))
    return torch.stack(outs, dim=0)


def make_inputs(config, generator, device):
    """seq_lens: the evenly spaced quantiles of the uniform distribution on [1, max_len] (the
    config fixes the lengths, the seed which sequence gets which)."""
    batch, max_len = int(config["batch"]), int(config["max_len"])
    fixed = torch.tensor([1 + (2 * i + 1) * max_len // (2 * batch) for i in range(batch)], device=device)
    lens = fixed[torch.randperm(batch, generator=generator, device=device)]
    return {"seq_lens": lens.to(torch.int32)}
