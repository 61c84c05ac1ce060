import torch


def reference(x, cu_seqlens, total_tokens, num_seqs, hidden, max_seqlen):
    """Per-sequence mean of the packed rows of x, computed in the dtype it is given (the
    harness upcasts the fp16 hidden states to fp32)."""
    assert x.shape == (total_tokens, hidden)
    seg = torch.repeat_interleave(
        torch.arange(num_seqs, device=x.device),
        (cu_seqlens[1:] - cu_seqlens[:-1]).long(),
        output_size=total_tokens)
    out = torch.zeros((num_seqs, hidden), dtype=x.dtype, device=x.device)
    out.index_add_(0, seg, x)
    lens = (cu_seqlens[1:] - cu_seqlens[:-1]).to(x.dtype)
    return out / lens[:, None]


def make_inputs(config, generator, device):
    """cu_seqlens for num_seqs lengths adding up to total_tokens: one is max_seqlen; the others
    split the rest in proportion to evenly spaced quantiles of a log-normal (sigma 0.75), each
    in [1, max_seqlen], the rounding remainder spread over those with room. The lengths are
    fixed by the config; the seed draws their order."""
    n = int(config["num_seqs"])
    total = int(config["total_tokens"])
    longest = int(config["max_seqlen"])
    assert n * longest >= total and longest + n - 1 <= total
    others = []
    if n > 1:
        rest = total - longest
        w = torch.exp(0.75 * torch.special.ndtri((torch.arange(n - 1, dtype=torch.float64) + 0.5) / (n - 1)))
        others = (w / w.sum() * rest).floor().long().clamp(1, longest).tolist()
        left = rest - sum(others)
        while left != 0:
            for j in range(n - 1):
                if left > 0 and others[j] < longest:
                    step = min(left, longest - others[j])
                elif left < 0 and others[j] > 1:
                    step = -min(-left, others[j] - 1)
                else:
                    continue
                others[j] += step
                left -= step
                if left == 0:
                    break
    lens = others + [longest]
    lens = [lens[i] for i in torch.randperm(n, generator=generator, device=device).tolist()]
    cu = [0]
    for length in lens:
        cu.append(cu[-1] + length)
    assert cu[-1] == total and max(lens) == longest and min(lens) >= 1
    return {"cu_seqlens": torch.tensor(cu, dtype=torch.int32, device=device)}
