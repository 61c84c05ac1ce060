import math

import torch
import torch.nn.functional as F


def reference(input, grid, batch, channels, in_h, in_w, out_h, out_w):
    """Bilinear sampling with zero padding, align_corners=False."""
    return F.grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def make_inputs(config, generator, device):
    """Per image a random affine map near the identity (scale 0.8-1.2, rotation up to 15
    degrees, translation up to 0.1 in normalised units) applied to the output pixel centres,
    plus a normal jitter of one input pixel per point. The maps are fixed by the config (each
    parameter at evenly spaced quantiles of its range, paired by a generator seeded by the
    shape), so the share of points falling outside the image is the same for every seed; the
    seed deals them out to the images, mirrors each in x and / or y (which keeps that share)
    and draws the jitter."""
    b, ih, iw = int(config["batch"]), int(config["in_h"]), int(config["in_w"])
    oh, ow = int(config["out_h"]), int(config["out_w"])
    g = torch.Generator().manual_seed(0x6E1D + (((b * 1031 + ih) * 1031 + iw) * 1031 + oh) * 1031 + ow)
    quantiles = (torch.arange(b, dtype=torch.float64) + 0.5) / b

    def uniform(lo, hi):
        return (quantiles[torch.randperm(b, generator=g)] * (hi - lo) + lo).float().to(device)

    scale = uniform(0.8, 1.2)
    angle = uniform(-math.pi / 12, math.pi / 12)
    tx, ty = uniform(-0.1, 0.1), uniform(-0.1, 0.1)
    perm = torch.randperm(b, generator=generator, device=device)
    mirror = torch.where(torch.rand(2, b, generator=generator, device=device) < 0.5, -1.0, 1.0)
    scale, angle = scale[perm], angle[perm] * mirror[0] * mirror[1]
    tx, ty = tx[perm] * mirror[0], ty[perm] * mirror[1]
    ys = (torch.arange(oh, device=device, dtype=torch.float32) * 2 + 1) / oh - 1
    xs = (torch.arange(ow, device=device, dtype=torch.float32) * 2 + 1) / ow - 1
    yy, xx = torch.meshgrid(ys, xs, indexing="ij")
    cos, sin = (torch.cos(angle) * scale).view(b, 1, 1), (torch.sin(angle) * scale).view(b, 1, 1)
    gx = cos * xx - sin * yy + tx.view(b, 1, 1)
    gy = sin * xx + cos * yy + ty.view(b, 1, 1)
    jitter = torch.randn(b, oh, ow, 2, generator=generator, device=device)
    gx = gx + jitter[..., 0] * (2.0 / iw)
    gy = gy + jitter[..., 1] * (2.0 / ih)
    return {"grid": torch.stack([gx, gy], dim=-1).contiguous()}
