"""Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
wrong on others.

The solution's two-phase kernels with one assumption baked in: a group's size
(c / groups) * h * w is a whole number of 4096-element tiles (true for every seen shape:
40960, 81920, 2^20). The tail masks are dropped and every tile and segment is counted as
full, so when the group size is not a multiple of 4096 the last tile of each group reads
(and writes) into the next group and the statistics are taken over the wrong elements and
count: the results are wrong, quietly. The only masks left keep every access inside the
buffers (and the channel index inside the weight), so the failure is a wrong value, never a
fault.
"""


import torch
import triton
import triton.language as tl

TILE = 4096
TARGET_PROGRAMS = 2048


@triton.jit
def _gn_partial(x_ptr, pmean_ptr, pm2_ptr, count, total, seg_len, n_seg, TILE: tl.constexpr):
    grp = tl.program_id(0)
    seg = tl.program_id(1)
    base = grp.to(tl.int64) * count
    lo = seg * seg_len
    hi = tl.minimum(lo + seg_len, count)
    offs = tl.arange(0, TILE)
    n_run = 0.0
    mean_run = 0.0
    m2_run = 0.0
    for start in range(lo, hi, TILE):
        i = start + offs                       # assumes whole tiles: no i < hi mask
        x = tl.load(x_ptr + base + i, mask=base + i < total, other=0.0).to(tl.float32)
        n_t = TILE * 1.0
        mean_t = tl.sum(x, axis=0) / n_t
        d = x - mean_t
        m2_t = tl.sum(d * d, axis=0)
        n_new = n_run + n_t
        delta = mean_t - mean_run
        mean_run = mean_run + delta * (n_t / n_new)
        m2_run = m2_run + m2_t + delta * delta * (n_run * n_t / n_new)
        n_run = n_new
    tl.store(pmean_ptr + grp * n_seg + seg, mean_run)
    tl.store(pm2_ptr + grp * n_seg + seg, m2_run)


@triton.jit
def _channel_in_group(i, hw, inv_hw):
    # i // hw without an integer division: i / hw < c / groups is small, so the fp32 estimate
    # is off by at most one either way, and one correction step fixes it.
    q = (i.to(tl.float32) * inv_hw).to(tl.int32)
    r = i - q * hw
    q = tl.where(r < 0, q - 1, q)
    return tl.where(r >= hw, q + 1, q)


@triton.jit
def _gn_apply(x_ptr, w_ptr, b_ptr, y_ptr, pmean_ptr, pm2_ptr, count, total, c, hw, inv_hw,
              per_group, groups, eps, seg_len, n_seg, TILE: tl.constexpr, S_BLOCK: tl.constexpr):
    grp = tl.program_id(0)
    seg = tl.program_id(1)
    # Merge the partials of the group: counts are known from the segment layout.
    s = tl.arange(0, S_BLOCK)
    s_ok = s < n_seg
    p_mean = tl.load(pmean_ptr + grp * n_seg + s, mask=s_ok, other=0.0)
    p_m2 = tl.load(pm2_ptr + grp * n_seg + s, mask=s_ok, other=0.0)
    p_n = tl.where(s_ok, seg_len, 0).to(tl.float32)          # assumes full segments
    mean = tl.sum(p_n * p_mean, axis=0) / count
    dev = tl.where(s_ok, p_mean - mean, 0.0)
    m2 = tl.sum(p_m2, axis=0) + tl.sum(p_n * dev * dev, axis=0)
    rstd = 1.0 / tl.sqrt(m2 / count + eps)

    base = grp.to(tl.int64) * count
    ch0 = (grp % groups) * per_group
    lo = seg * seg_len
    hi = tl.minimum(lo + seg_len, count)
    offs = tl.arange(0, TILE)
    for start in range(lo, hi, TILE):
        i = start + offs
        mask = base + i < total                # stays in the buffer; not a per-group mask
        ch = tl.minimum(ch0 + _channel_in_group(i, hw, inv_hw), c - 1)
        x = tl.load(x_ptr + base + i, mask=mask, other=0.0).to(tl.float32)
        wt = tl.load(w_ptr + ch, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + ch, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * wt + b
        tl.store(y_ptr + base + i, y.to(y_ptr.dtype.element_ty), mask=mask)


def group_norm(x, weight, bias, y, n, c, h, w, groups, eps):
    hw = h * w
    per_group = c // groups
    count = per_group * hw
    n_groups = n * groups
    tile = min(TILE, triton.next_power_of_2(count))
    tiles = triton.cdiv(count, tile)
    want = max(1, TARGET_PROGRAMS // n_groups)
    seg_len = triton.cdiv(tiles, min(tiles, want)) * tile      # whole tiles per segment
    n_seg = triton.cdiv(count, seg_len)
    num_warps = max(1, min(8, tile // 512))
    pmean = torch.empty((n_groups, n_seg), dtype=torch.float32, device=x.device)
    pm2 = torch.empty((n_groups, n_seg), dtype=torch.float32, device=x.device)
    grid = (n_groups, n_seg)
    total = n * c * hw
    _gn_partial[grid](x, pmean, pm2, count, total, seg_len, n_seg, TILE=tile, num_warps=num_warps)
    _gn_apply[grid](x, weight, bias, y, pmean, pm2, count, total, c, hw, 1.0 / hw, per_group, groups, eps,
                    seg_len, n_seg, TILE=tile, S_BLOCK=triton.next_power_of_2(n_seg),
                    num_warps=num_warps)
    return None
