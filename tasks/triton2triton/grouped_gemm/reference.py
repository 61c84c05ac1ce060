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
    """Expert offsets of a routed batch: `rows` token copies assigned to experts with a
    router-like skew (popularity softmax(N(0, 1)), so loads differ several-fold), about one
    expert in eight receiving nothing (never the most popular one), then counted and
    prefix-summed: offsets[0] = 0, offsets[experts] = rows."""
    rows, experts = int(config["rows"]), int(config["experts"])
    logits = torch.randn(experts, generator=generator, device=device)
    idx = torch.arange(experts, device=device)
    dead = (torch.rand(experts, generator=generator, device=device) < 0.125) & (idx != torch.argmax(logits))
    p = torch.softmax(logits, dim=0) * (~dead).float()
    choice = torch.multinomial(p, rows, replacement=True, generator=generator)
    counts = torch.bincount(choice, minlength=experts)
    offsets = torch.zeros(experts + 1, dtype=torch.int64, device=device)
    offsets[1:] = torch.cumsum(counts, 0)
    return {"expert_offsets": offsets.to(torch.int32)}
