import torch


def reference(x, ptr, num_nodes, segments, features):
    """Segmented max over CSR row segments and the first row of each maximum, in the dtype
    it is given (the harness passes float64 for this fp32 task; values are exact either
    way). Returns (out, arg)."""
    assert x.shape == (num_nodes, features) and ptr.shape == (segments + 1,)
    lengths = ptr[1:] - ptr[:-1]
    seg = torch.repeat_interleave(torch.arange(segments, device=x.device), lengths)
    out = torch.full((segments, features), float("-inf"), dtype=x.dtype, device=x.device)
    out = out.scatter_reduce(0, seg[:, None].expand(num_nodes, features), x, "amax", include_self=True)
    rows = torch.arange(num_nodes, device=x.device)[:, None]
    first = torch.where(x == out[seg], rows, torch.full_like(rows, num_nodes))
    arg = torch.full((segments, features), num_nodes, dtype=torch.int64, device=x.device)
    arg = arg.scatter_reduce(0, seg[:, None].expand(num_nodes, features), first, "amin", include_self=True)
    return out, arg


def segment_lengths(total, count):
    """Fixed by the config: 1 plus the evenly spaced quantiles of an exponential share of the
    other total - count elements (what random distinct cut points give on average)."""
    w = -torch.log1p(-(torch.arange(count, dtype=torch.float64) + 0.5) / count)
    cum = torch.floor((total - count) * torch.cumsum(w, 0) / w.sum()).to(torch.int64)
    cum[-1] = total - count
    return 1 + torch.diff(cum, prepend=torch.zeros(1, dtype=torch.int64))


def make_inputs(config, generator, device):
    """x = ReLU(N(0, 1)); ptr: every segment non-empty, the lengths fixed by the config
    (segment_lengths), their order drawn by the seed."""
    n, g, f = int(config["num_nodes"]), int(config["segments"]), int(config["features"])
    x = torch.relu(torch.randn(n, f, generator=generator, device=device))
    lengths = segment_lengths(n, g).to(device)[torch.randperm(g, generator=generator, device=device)]
    ptr = torch.cat([torch.zeros(1, dtype=torch.int64, device=device), torch.cumsum(lengths, 0)])
    return {"x": x.contiguous(), "ptr": ptr.contiguous()}
