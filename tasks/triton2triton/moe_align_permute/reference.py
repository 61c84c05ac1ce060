import torch


def reference(x, topk_ids, tokens, topk, experts, hidden):
    """Stable sort of the token copies by expert. Returns (x_sorted, src_index, dst_index,
    expert_offsets); x_sorted has x's dtype, the rest int32."""
    flat = topk_ids.reshape(-1).to(torch.int64)
    src = torch.sort(flat, stable=True).indices
    dst = torch.empty_like(src)
    dst[src] = torch.arange(src.numel(), device=src.device)
    counts = torch.bincount(flat, minlength=experts)
    offsets = torch.zeros(experts + 1, dtype=torch.int64, device=flat.device)
    offsets[1:] = torch.cumsum(counts, 0)
    x_sorted = x[src // topk]
    return (x_sorted, src.to(torch.int32), dst.view(tokens, topk).to(torch.int32),
            offsets.to(torch.int32))


def make_inputs(config, generator, device):
    """Router-like expert choices: every token takes the topk largest of bias[e] + Gumbel
    noise (distinct experts, best first), with an expert popularity bias ~ N(0, 1), so loads
    differ several-fold between experts and rare experts may get no token."""
    tokens, topk, experts = int(config["tokens"]), int(config["topk"]), int(config["experts"])
    bias = torch.randn(experts, generator=generator, device=device)
    u = torch.rand(tokens, experts, generator=generator, device=device).clamp_(1e-12, 1.0 - 1e-7)
    scores = bias[None, :] - torch.log(-torch.log(u))
    ids = torch.topk(scores, topk, dim=1).indices
    return {"topk_ids": ids.to(torch.int32)}
