import torch


def reference(packed, cu_seqlens, batch, max_len, total, hidden, left_pad):
    """padded[b, pos] = packed[cu_seqlens[b] + i] for the len_b rows of sequence b, at
    pos = i (right padding) or max_len - len_b + i (left padding); zeros elsewhere."""
    out = torch.zeros((batch, max_len, hidden), dtype=packed.dtype, device=packed.device)
    cu = cu_seqlens.tolist()
    for b in range(batch):
        n = cu[b + 1] - cu[b]
        start = max_len - n if left_pad else 0
        out[b, start:start + n] = packed[cu[b]:cu[b + 1]]
    return out


def make_inputs(config, generator, device):
    """Sequence lengths that sum to `total`, each in [1, max_len]: the padding
    batch * max_len - total is shared out in proportion to u^2 per sequence (u uniform, so
    some sequences are nearly full and a few are much shorter), capped at max_len - 1, the
    rounding remainder given to sequences with room, in random order."""
    batch, max_len, total = int(config["batch"]), int(config["max_len"]), int(config["total"])
    deficit = batch * max_len - total
    u = torch.rand(batch, generator=generator, device=device).cpu().double() ** 2 + 1e-3
    order = torch.randperm(batch, generator=generator, device=device).cpu().tolist()
    pad = torch.clamp(torch.floor(deficit * u / u.sum()), max=max_len - 1).long()
    left = deficit - int(pad.sum())
    while left > 0:
        for b in order:
            room = max_len - 1 - int(pad[b])
            take = min(room, left)
            pad[b] += take
            left -= take
            if left == 0:
                break
    lengths = max_len - pad
    cu = torch.zeros(batch + 1, dtype=torch.int64)
    cu[1:] = torch.cumsum(lengths, 0)
    assert int(cu[-1]) == total and int(lengths.min()) >= 1
    return {"cu_seqlens": cu.to(torch.int32).to(device)}
