import torch


def reference(x, w, expert_offsets, rows, experts, k, n):
    """y[s:t] = x[s:t] @ w[e] for each expert e with [s, t) = expert_offsets[e : e + 2],
    computed in the dtype it is given (fp16 is upcast to fp32 first)."""
    off = expert_offsets.tolist()
    y = torch.zeros((rows, n), dtype=x.dtype, device=x.device)
    for e in range(experts):
        s, t = off[e], off[e + 1]
        if t > s:
            y[s:t] = x[s:t] @ w[e].to(x.dtype)
    return y


def make_inputs(config, generator, device):
    """Expert offsets of a routed batch with a router-like skew: expert popularities
    exp(z) for evenly spaced quantiles z of N(0, 1) (loads differ several-fold), one expert in
    eight receiving nothing (spread over the popularity ranks, never the most popular one),
    loads rounded to add up to `rows`. The loads are fixed by the config; the seed draws which
    expert gets which. offsets[0] = 0, offsets[experts] = rows."""
    rows, experts = int(config["rows"]), int(config["experts"])
    p = torch.exp(torch.special.ndtri((torch.arange(experts, dtype=torch.float64) + 0.5) / experts))
    dead = (experts + 3) // 8                                  # ~ (experts - 1) / 8, rounded
    p[((torch.arange(dead, dtype=torch.float64) + 0.5) * (experts - 1) / max(dead, 1)).long()] = 0.0
    share = p / p.sum() * rows
    counts = share.floor().long()
    counts[torch.argsort(counts.double() - share)[:rows - int(counts.sum())]] += 1   # largest remainders
    counts = counts[torch.randperm(experts, generator=generator, device=device).cpu()]
    offsets = torch.zeros(experts + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(counts, 0)
    return {"expert_offsets": offsets.to(torch.int32).to(device)}
