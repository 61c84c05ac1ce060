import torch


def reference(values, boundaries, batch, context, num_boundaries):
    """Index of each value's bucket: boundaries[k - 1] <= v < boundaries[k] (right=True)."""
    return torch.bucketize(values, boundaries, right=True)


def make_inputs(config, generator, device):
    """boundaries: sorted normal draws (std 3) spread apart (rank i raised by i * 2**-20,
    so neighbours are distinct except, rarely, beyond |b| = 8; equal boundaries are still
    well defined: the index counts the boundaries <= v); values: normal
    with std 3 (mostly inside the boundaries' range, some beyond either end), with ~1% of
    them replaced by exact copies of random boundaries (ties, which go right)."""
    batch, context, nb = int(config["batch"]), int(config["context"]), int(config["num_boundaries"])
    b = torch.randn(nb, generator=generator, device=device).mul_(3.0)
    b, _ = torch.sort(b)
    b.add_(torch.arange(nb, device=device, dtype=torch.float32).mul_(2.0 ** -20))
    values = torch.randn(batch, context, generator=generator, device=device).mul_(3.0)
    hit = torch.rand(batch, context, generator=generator, device=device) < 0.01
    pick = torch.randint(0, nb, (batch, context), generator=generator, device=device)
    values = torch.where(hit, b[pick], values)
    return {"values": values.contiguous(), "boundaries": b.contiguous()}
