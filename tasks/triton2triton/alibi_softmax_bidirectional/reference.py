import math

import torch


def alibi_slopes(heads):
    """ALiBi's slopes (Press et al.): 2^(-8/n) * k for k = 1..n when n is a power of two;
    otherwise those of the nearest lower power of two followed by every other slope of the
    next one (BLOOM / MosaicBERT)."""
    def power_of_two(n):
        start = 2.0 ** (-8.0 / n)
        return [start ** (k + 1) for k in range(n)]
    if math.log2(heads).is_integer():
        return power_of_two(heads)
    low = 2 ** math.floor(math.log2(heads))
    return power_of_two(low) + power_of_two(2 * low)[0::2][: heads - low]


def reference(scores, slopes, batch, heads, seq):
    """Softmax over the keys of scores - slope * |i - j|, computed in the dtype it is given
    (the harness upcasts the fp16 scores to fp32), a group of heads at a time."""
    assert scores.shape == (batch, heads, seq, seq) and slopes.shape == (heads,)
    pos = torch.arange(seq, device=scores.device)
    dist = (pos[:, None] - pos[None, :]).abs().to(scores.dtype)           # [seq, seq]
    bias = -slopes.to(scores.dtype)[:, None, None] * dist                  # [heads, seq, seq]
    out = torch.empty_like(scores)
    step = max(1, 2**25 // (heads * seq * seq))
    for b0 in range(0, batch, step):
        out[b0:b0 + step] = torch.softmax(scores[b0:b0 + step] + bias, dim=-1)
    return out


def make_inputs(config, generator, device):
    """The standard ALiBi slopes for the config's head count (deterministic)."""
    heads = int(config["heads"])
    return {"slopes": torch.tensor(alibi_slopes(heads), dtype=torch.float32, device=device)}
