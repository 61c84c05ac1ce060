import torch


def reference(expert_out, dst_index, topk_weights, tokens, topk, hidden):
    """out[t] = sum_j topk_weights[t, j] * expert_out[dst_index[t, j]], one slot j at a time,
    in the dtype it is given (the harness passes float32 activations, float64 weights)."""
    assert expert_out.shape == (tokens * topk, hidden) and dst_index.shape == (tokens, topk)
    idx = dst_index.long()
    out = torch.zeros((tokens, hidden), dtype=topk_weights.dtype, device=expert_out.device)
    for j in range(topk):
        out += topk_weights[:, j, None] * expert_out[idx[:, j]].to(topk_weights.dtype)
    return out


def make_inputs(config, generator, device):
    """Router-like choices (topk largest of popularity[e] + Gumbel noise, popularity ~ N(0,
    1), with one expert per 4 * topk tokens, at least 8), sorted stably by expert:
    dst_index[t, j] is the sorted position of copy t * topk + j."""
    tokens, topk = int(config["tokens"]), int(config["topk"])
    experts = max(8, 4 * topk)
    popularity = torch.randn(experts, generator=generator, device=device)
    u = torch.rand(tokens, experts, generator=generator, device=device).clamp_(1e-12, 1.0 - 1e-7)
    ids = torch.topk(popularity[None, :] - torch.log(-torch.log(u)), topk, dim=1).indices
    order = torch.sort(ids.reshape(-1), stable=True).indices
    dst = torch.empty_like(order)
    dst[order] = torch.arange(order.numel(), device=device)
    return {"dst_index": dst.reshape(tokens, topk).to(torch.int32)}
