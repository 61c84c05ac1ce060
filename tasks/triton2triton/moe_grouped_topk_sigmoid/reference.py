import math

import torch


def reference(logits, bias, tokens, experts, n_group, topk_group, topk, routed_scaling_factor):
    """DeepSeek-V3 group-limited top-k routing with sigmoid scores and a correction bias, in
    the dtype it is given (float64 for this fp32 task). Returns (weights [tokens, topk],
    ids [tokens, topk] int32), ids in descending order of scores + bias."""
    scores = torch.sigmoid(logits)
    choice = scores + bias[None, :]
    gsize = experts // n_group
    grouped = choice.view(tokens, n_group, gsize)
    group_scores = grouped.topk(2, dim=-1).values.sum(dim=-1)              # [T, G]
    group_idx = group_scores.topk(topk_group, dim=-1).indices               # [T, TG]
    group_mask = torch.zeros_like(group_scores, dtype=torch.bool)
    group_mask.scatter_(1, group_idx, True)
    expert_mask = group_mask[:, :, None].expand(tokens, n_group, gsize).reshape(tokens, experts)
    masked = choice.masked_fill(~expert_mask, float("-inf"))
    ids = masked.topk(topk, dim=-1, sorted=True).indices                    # [T, K]
    w = scores.gather(1, ids)
    w = w / w.sum(dim=-1, keepdim=True) * routed_scaling_factor
    return w, ids.to(torch.int32)


def _sidon(n):
    """n integers whose pairwise sums are all distinct (Erdos-Turan: 2 p k + (k^2 mod p), p a
    prime >= n), ascending, the largest below 2 p^2."""
    p = max(n, 2)
    while any(p % d == 0 for d in range(2, int(math.isqrt(p)) + 1)):
        p += 1
    return [2 * p * k + (k * k) % p for k in range(n)]


def make_inputs(config, generator, device):
    """Router inputs whose routing decisions have no near-ties.

    For each token the values scores + bias of its experts are a random permutation of a Sidon
    set scaled by a power of two, unit = 2^-(bits + 1) with the largest element < 2^bits: any
    two experts differ by >= 1 unit, and so do any two groups' top-2 sums (sums of disjoint
    pairs of a Sidon set are distinct), so selection in fp32 cannot flip: the unit is >= 2^-18 = 3.8e-6 for up to
    256 experts, the fp32 error of sigmoid + bias is ~1e-7. bias is a multiple of the unit in [-0.45, -0.05];
    logits = logit(target - bias) with target - bias in [0.05, 0.95]."""
    tokens, experts = int(config["tokens"]), int(config["experts"])
    vals = torch.tensor(_sidon(experts), dtype=torch.float64, device=device)
    bits = int(vals.max().item()).bit_length()
    unit = 2.0 ** -(bits + 1)
    bias_units = torch.floor((0.05 + 0.4 * torch.rand(experts, generator=generator, device=device,
                                                        dtype=torch.float64)) / unit)
    bias = -bias_units * unit                                                # exact in fp32
    perm = torch.argsort(torch.rand(tokens, experts, generator=generator, device=device), dim=1)
    target = vals[perm] * unit                                               # [T, E], < 0.5
    s = target - bias[None, :]                                               # [0.05, 0.95]
    logits = torch.log(s) - torch.log1p(-s)
    return {"logits": logits.to(torch.float32), "bias": bias.to(torch.float32)}
