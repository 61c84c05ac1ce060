import torch


def reference(y, dst_index, weights, tokens, topk, hidden):
    """out[t] = sum_j weights[t, j] * y[dst_index[t, j]], in the dtype of y it is given
    (fp16 is upcast to fp32)."""
    g = y[dst_index.to(torch.int64)]                       # [tokens, topk, hidden]
    return (weights.to(y.dtype)[:, :, None] * g).sum(dim=1)


def make_inputs(config, generator, device):
    """A routed batch: every token takes the topk largest of bias[e] + Gumbel noise
    (distinct experts; popularity bias ~ N(0, 1)); the copies are sorted by expert, stably,
    and dst_index is where each copy landed. weights: softmax over the selected scores
    (renormalised top-k), or for top-1 a sigmoid of the score."""
    tokens, topk, experts = int(config["tokens"]), int(config["topk"]), int(config["experts"])
    bias = torch.randn(experts, generator=generator, device=device)
    u = torch.rand(tokens, experts, generator=generator, device=device).clamp_(1e-12, 1.0 - 1e-7)
    scores = bias[None, :] - torch.log(-torch.log(u))
    top = torch.topk(scores, topk, dim=1)
    src = torch.sort(top.indices.reshape(-1), stable=True).indices
    dst = torch.empty_like(src)
    dst[src] = torch.arange(src.numel(), device=device)
    if topk == 1:
        w = torch.sigmoid(top.values - bias.mean())
    else:
        w = torch.softmax(top.values, dim=1)
    return {"dst_index": dst.view(tokens, topk).to(torch.int32), "weights": w.to(torch.float32)}
