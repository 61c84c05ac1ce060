import torch


def reference(q, k_cache, v_cache, block_tables, context_lens, num_seqs, q_heads, kv_heads, head_dim,
              block_size, max_context, max_blocks, sm_scale):
    """Paged grouped-query decode attention, one sequence at a time, computed in the dtype it
    is given (the harness upcasts the fp16 inputs to fp32). Only the first
    ceil(context_lens[i] / block_size) entries of a sequence's block table are used, and of
    the tokens they hold only the first context_lens[i]."""
    group = q_heads // kv_heads
    out = torch.empty_like(q)
    lens = context_lens.tolist()
    for i in range(num_seqs):
        n = int(lens[i])
        blocks = block_tables[i, :(n + block_size - 1) // block_size].long()
        k = k_cache[blocks].reshape(-1, kv_heads, head_dim)[:n]          # [n, kv_heads, head_dim]
        v = v_cache[blocks].reshape(-1, kv_heads, head_dim)[:n]
        qi = q[i].reshape(kv_heads, group, head_dim)
        s = torch.einsum("hgd,nhd->hgn", qi, k) * sm_scale
        p = torch.softmax(s, dim=-1)
        out[i] = torch.einsum("hgn,nhd->hgd", p, v).reshape(q_heads, head_dim)
    return out


def make_inputs(config, generator, device):
    """context_lens: one is exactly max_context, the others are evenly spaced quantiles of the
    uniform on [1, max_context], rounded to add up to (num_seqs - 1) * (max_context + 1) // 2
    (the lengths are fixed by the config; the seed draws which sequence gets which);
    block_tables a random permutation of the num_seqs * max_blocks pool blocks, so every entry
    is a valid block and no sequence's blocks are contiguous."""
    n = int(config["num_seqs"])
    max_context = int(config["max_context"])
    block_size = int(config["block_size"])
    max_blocks = (max_context + block_size - 1) // block_size
    m = n - 1
    q = 0.5 + (torch.arange(m, dtype=torch.float64) + 0.5) * max_context / max(m, 1)   # mean (max_context + 1) / 2
    lens = q.floor().long()
    left = m * (max_context + 1) // 2 - int(lens.sum())
    lens[torch.argsort(lens.double() - q)[:left]] += 1          # largest remainders first
    lens = torch.cat([lens, torch.tensor([max_context])]).clamp(1, max_context)
    lens = lens[torch.randperm(n, generator=generator, device=device).cpu()].to(device)
    table = torch.randperm(n * max_blocks, generator=generator, device=device).view(n, max_blocks)
    return {"block_tables": table.to(torch.int32), "context_lens": lens.to(torch.int32)}
