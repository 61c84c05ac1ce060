import torch

BLOCK_M = 16


def reference(x, topk_ids, expert_offsets, tokens, topk, experts, hidden):
    """Stable sort of the token copies by expert into the padded segments that
    expert_offsets describes; padding rows are -1 / zeros. (Positions outside the buffer,
    which only inconsistent offsets could give, are dropped.)"""
    assert x.shape == (tokens, hidden) and topk_ids.shape == (tokens, topk)
    assert expert_offsets.shape == (experts + 1,)
    rows = tokens * topk + (BLOCK_M - 1) * experts
    flat = topk_ids.reshape(-1).long()
    order = torch.sort(flat, stable=True).indices                       # copies grouped by expert
    e_sorted = flat[order]
    counts = torch.bincount(flat, minlength=experts)
    first = torch.cumsum(counts, 0) - counts                             # unpadded start of each expert
    rank = torch.arange(order.numel(), device=x.device) - first[e_sorted]
    pos = expert_offsets.long()[e_sorted] + rank
    keep = (pos >= 0) & (pos < rows)
    pos, order = pos[keep], order[keep]
    src = torch.full((rows,), -1, dtype=torch.int32, device=x.device)
    src[pos] = order.to(torch.int32)
    out = torch.zeros((rows, hidden), dtype=x.dtype, device=x.device)
    out[pos] = x[order // topk]
    return out, src


def make_inputs(config, generator, device):
    """Router-like choices: every token takes the topk largest of popularity[e] + Gumbel
    noise (distinct experts), popularity the evenly spaced quantiles of N(0, 1), the noise
    drawn once per config (so the per-expert loads are fixed by the config); the seed
    relabels the experts and shuffles the tokens. expert_offsets is the exclusive scan of
    the counts rounded up to multiples of 16."""
    tokens, topk, experts = int(config["tokens"]), int(config["topk"]), int(config["experts"])
    fixed = torch.Generator().manual_seed(0x5EED + 1_000_003 * (1_000_003 * tokens + topk) + experts)
    popularity = torch.special.ndtri((torch.arange(experts, dtype=torch.float64) + 0.5) / experts).float()
    u = torch.rand(tokens, experts, generator=fixed).clamp_(1e-12, 1.0 - 1e-7)
    ids = torch.topk(popularity[None, :] - torch.log(-torch.log(u)), topk, dim=1).indices.to(device)
    relabel = torch.randperm(experts, generator=generator, device=device)
    ids = relabel[ids][torch.randperm(tokens, generator=generator, device=device)]
    counts = torch.bincount(ids.reshape(-1), minlength=experts)
    padded = (counts + BLOCK_M - 1) // BLOCK_M * BLOCK_M
    offsets = torch.zeros(experts + 1, dtype=torch.int64, device=device)
    offsets[1:] = torch.cumsum(padded, 0)
    return {"topk_ids": ids.to(torch.int32), "expert_offsets": offsets.to(torch.int32)}
