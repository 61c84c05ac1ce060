import torch


def reference(x, ptr, n, segments):
    """Exclusive prefix sum restarted at every segment start ptr[s] (int64 arithmetic)."""
    assert x.shape == (n,) and ptr.shape == (segments + 1,)
    xl = x.to(torch.int64)
    excl = torch.cumsum(xl, dim=0) - xl                      # global exclusive scan
    lengths = ptr[1:] - ptr[:-1]
    seg_id = torch.repeat_interleave(torch.arange(segments, device=x.device), lengths)
    out = excl - excl[ptr[:-1]][seg_id]
    return out.to(torch.int32)


def segment_lengths(total, count):
    """Fixed by the config: 1 plus the evenly spaced quantiles of an exponential share of the
    other total - count elements (what random distinct cut points give on average)."""
    w = -torch.log1p(-(torch.arange(count, dtype=torch.float64) + 0.5) / count)
    cum = torch.floor((total - count) * torch.cumsum(w, 0) / w.sum()).to(torch.int64)
    cum[-1] = total - count
    return 1 + torch.diff(cum, prepend=torch.zeros(1, dtype=torch.int64))


def make_inputs(config, generator, device):
    """ptr: every segment non-empty, the lengths fixed by the config (segment_lengths), their
    order drawn by the seed."""
    n, g = int(config["n"]), int(config["segments"])
    lengths = segment_lengths(n, g).to(device)[torch.randperm(g, generator=generator, device=device)]
    ptr = torch.cat([torch.zeros(1, dtype=torch.int64, device=device), torch.cumsum(lengths, 0)])
    return {"ptr": ptr.contiguous()}
