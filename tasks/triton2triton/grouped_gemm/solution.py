"""Reference solution for the grouped (per-expert) GEMM: correct for every shape.

- One launch for all experts. The grid covers an upper bound of the row tiles of all
  experts, cdiv(rows, BLOCK_M) + experts (each expert wastes at most one partial tile),
  times the column tiles. Each program reads the experts' offsets as one vector, turns
  them into tile counts and their prefix sum (tl.cumsum), and finds its expert and its
  tile inside the expert by comparing its tile index with the prefix sum; programs past the
  last real tile return at once. No host synchronisation, no empty launches per expert,
  and the whole grouped GEMM fills the GPU even when single experts have few rows.
- Tiles sized by the mean rows per expert: >= 512 rows take 128 x 256 x 64 tiles (8 warps,
  3 stages, 144 KB of shared memory), the compute-bound regime; fewer take 64 x 128 x 64
  (4 warps, 4 stages), or 16 / 32-row tiles when experts hold a handful of rows (decode:
  bound by reading the weights, nothing gained from padding rows up to 64). Smaller tiles
  and 2 stages where shared memory is 64 KB (AMD).
- Grouped tile order: consecutive programs walk down a band of GROUP_M row tiles before
  moving to the next column tile, so the w[e] tiles they share stay in L2.
- Rows beyond the expert's end are clamped to its last row instead of masked (their results
  are dropped by the masked store). Columns of w are contiguous, so they are masked (a
  clamp would break the 16-byte loads); the n and k masks are compiled out when n and k are
  multiples of the block (EVEN_N, EVEN_K).
- Alignment. The tile loads are 16-byte async copies (cp.async) only when Triton can prove
  every row of x (stride k) and of w and y (stride n) 16-byte aligned. It learns that a
  scalar argument is a multiple of 16 only from its value, so k and n that are multiples
  of 8 but not of 16 are passed divided by 8 (the kernel multiplies back). When k or n is
  not a multiple of 8 at all (primes, and most of the random shape space), the rows really
  are misaligned: the GEMM then fell back to 2-byte synchronous loads and ran slower than
  the starting kernel (3001 x 1031 x 1531: 437 us against 426). There x and w are first
  copied into zero-padded buffers (`_pad_copy`: x to [rows, kp], kp = k rounded up to
  BLOCK_K; w to [experts, kp, nw], nw = n rounded up to 8; about 2 passes over the
  operands, small next to the GEMM), the GEMM runs on them exactly as on aligned shapes and
  writes a [rows, nw] y buffer with 16-byte stores (2-byte stores of a 64 x 128 tile need a
  64-bit address per element: 255 registers and spills), and `_unpad_copy` moves its first
  n columns into y. The buffers come from PyTorch's caching allocator.
"""

import torch
import triton
import triton.language as tl

PAD_BR = 4           # rows x columns per program of the padding copy (16 elements a thread)
PAD_BC = 512


@triton.jit
def _grouped_gemm(x_ptr, w_ptr, off_ptr, y_ptr, rows, experts, k_q, n_q,
                  K_MULT: tl.constexpr, N_MULT: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, E_PAD: tl.constexpr,
                  EVEN_K: tl.constexpr, EVEN_N: tl.constexpr):
    # k: row stride of x, rows of each w[e] and the reduction length (x and w zero-padded
    # beyond the true k when they are padded copies); n: row stride of w and of y and the
    # number of columns computed (the padded width when w and y are padded copies: the
    # padded columns of w are zeros). Passed divided by MULT (8 when not a multiple of 16)
    # so that Triton sees the factor 8 and proves the rows 16-byte aligned.
    k = k_q * K_MULT
    n = n_q * N_MULT
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(n, BLOCK_N)
    tiles_m_bound = tl.cdiv(rows, BLOCK_M) + experts
    band = pid // (GROUP_M * tiles_n)
    first_m = band * GROUP_M
    band_height = tl.minimum(tiles_m_bound - first_m, GROUP_M)
    within = pid - band * (GROUP_M * tiles_n)
    tile_m = first_m + within % band_height
    pid_n = within // band_height

    # which expert owns row tile `tile_m`
    ei = tl.arange(0, E_PAD)
    e_ok = ei < experts
    lo = tl.load(off_ptr + ei, mask=e_ok, other=0)
    hi = tl.load(off_ptr + ei + 1, mask=e_ok, other=0)
    tiles_e = (hi - lo + BLOCK_M - 1) // BLOCK_M
    ends = tl.cumsum(tiles_e, 0)                       # inclusive prefix sum
    if tile_m >= tl.sum(tiles_e):
        return
    e = tl.sum((ends <= tile_m).to(tl.int32))
    sel = ei == e
    first_tile = tl.sum(tl.where(sel, ends - tiles_e, 0))
    end = tl.sum(tl.where(sel, hi, 0))
    row0 = tl.sum(tl.where(sel, lo, 0)) + (tile_m - first_tile) * BLOCK_M

    rm = row0 + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    rm_in = tl.minimum(rm, end - 1).to(tl.int64)
    n_ok = rn[None, :] < n
    x_ptrs = x_ptr + rm_in[:, None] * k + rk[None, :]                                     # [BLOCK_M, BLOCK_K]
    w_ptrs = w_ptr + e.to(tl.int64) * k * n + rk.to(tl.int64)[:, None] * n + rn[None, :]  # [BLOCK_K, BLOCK_N]

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, k, BLOCK_K):
        if EVEN_K:
            a = tl.load(x_ptrs)
            if EVEN_N:
                b = tl.load(w_ptrs)
            else:
                b = tl.load(w_ptrs, mask=n_ok, other=0.0)
        else:
            k_ok = (k0 + rk) < k
            a = tl.load(x_ptrs, mask=k_ok[None, :], other=0.0)
            b = tl.load(w_ptrs, mask=k_ok[:, None] & n_ok, other=0.0)
        acc = tl.dot(a, b, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K * n

    y_ptrs = y_ptr + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=(rm[:, None] < end) & n_ok)


@triton.jit
def _pad_copy(src_ptr, dst_ptr, dst_rows, n_cb, R, RP, C, CP_q, BR: tl.constexpr, BC: tl.constexpr):
    # dst [G * RP, CP] <- src [G * R, C] group by group (CP = 8 * CP_q >= C, RP >= R); rows
    # R..RP-1 and columns C..CP-1 of each group are written as zeros. 1-D grid, column
    # blocks fastest (a 2-D grid's second dimension is limited to 65535).
    CP = CP_q * 8
    pid = tl.program_id(0)
    d = (pid // n_cb) * BR + tl.arange(0, BR)                 # dst rows
    c = (pid % n_cb) * BC + tl.arange(0, BC)
    grp = d // RP
    rr = d - grp * RP
    d_ok = d < dst_rows
    src_ok = (d_ok & (rr < R))[:, None] & (c < C)[None, :]
    srow = (grp * R + rr).to(tl.int64)
    v = tl.load(src_ptr + srow[:, None] * C + c[None, :], mask=src_ok, other=0.0)
    tl.store(dst_ptr + d.to(tl.int64)[:, None] * CP + c[None, :], v,
             mask=d_ok[:, None] & (c < CP)[None, :])


@triton.jit
def _unpad_copy(src_ptr, dst_ptr, rows, n_cb, C, CS_q, BR: tl.constexpr, BC: tl.constexpr):
    # dst [rows, C] <- the first C columns of src [rows, CS] (CS = 8 * CS_q)
    CS = CS_q * 8
    pid = tl.program_id(0)
    r = ((pid // n_cb) * BR + tl.arange(0, BR)).to(tl.int64)
    c = (pid % n_cb) * BC + tl.arange(0, BC)
    ok = (r < rows)[:, None] & (c < C)[None, :]
    v = tl.load(src_ptr + r[:, None] * CS + c[None, :], mask=ok)
    tl.store(dst_ptr + r[:, None] * C + c[None, :], v, mask=ok)


def _padded(src, groups, r, rp, c, cp):
    """[groups, rp, cp] copy of src ([groups, r, c], contiguous), zero-padded."""
    dst = torch.empty((groups, rp, cp), dtype=src.dtype, device=src.device)
    n_cb = triton.cdiv(cp, PAD_BC)
    _pad_copy[(triton.cdiv(groups * rp, PAD_BR) * n_cb,)](src, dst, groups * rp, n_cb, r, rp, c,
                                                          cp // 8, BR=PAD_BR, BC=PAD_BC,
                                                          num_warps=4)
    return dst


def _config(rows, experts):
    """(BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages)."""
    mean = rows / experts
    if torch.version.hip:
        if mean >= 512:
            return 128, 128, 64, 8, 8, 2
        return (16 if mean <= 16 else 32 if mean <= 32 else 64), 128, 64, 8, 4, 2
    if mean >= 512:
        return 128, 256, 64, 8, 8, 3
    if mean <= 16:
        return 16, 128, 64, 8, 4, 4
    if mean <= 32:
        return 32, 128, 64, 8, 4, 4
    return 64, 128, 64, 8, 4, 4


def _div_mult(v):
    """(v / m, m): m = 8 when v is a multiple of 8 but not of 16, so the kernel sees 8 | v."""
    return (v, 1) if v % 16 == 0 else (v // 8, 8)


def grouped_gemm(x, w, expert_offsets, y, rows, experts, k, n):
    block_m, block_n, block_k, group_m, num_warps, num_stages = _config(rows, experts)
    xs, ws, ys, kp, nw = x, w, y, k, n
    if k % 8 or n % 8:
        # rows of x (stride k) or of w and y (stride n) not 16-byte aligned: copy x and w
        # once into zero-padded buffers (x: k -> kp, a multiple of BLOCK_K; w: [k, n] ->
        # [kp, nw], nw a multiple of 8) so that the GEMM gets its 16-byte async tile loads,
        # and let it write a [rows, nw] y buffer with 16-byte stores (2-byte stores of the
        # 64 x 128 tile need a 64-bit address per element: 255 registers and spills)
        if k % 8:
            kp = triton.cdiv(k, block_k) * block_k
            xs = _padded(x, 1, rows, rows, k, kp)
        nw = triton.cdiv(n, 8) * 8
        ws = _padded(w, experts, k, kp, n, nw)
        if nw != n:
            ys = torch.empty((rows, nw), dtype=y.dtype, device=y.device)
    k_q, k_mult = _div_mult(kp)
    n_q, n_mult = _div_mult(nw)
    grid = ((triton.cdiv(rows, block_m) + experts) * triton.cdiv(nw, block_n),)
    _grouped_gemm[grid](xs, ws, expert_offsets, ys, rows, experts, k_q, n_q,
                        K_MULT=k_mult, N_MULT=n_mult,
                        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=group_m,
                        E_PAD=max(16, triton.next_power_of_2(experts)),
                        EVEN_K=(kp % block_k == 0), EVEN_N=(nw % block_n == 0),
                        num_warps=num_warps, num_stages=num_stages)
    if ys is not y:
        n_cb = triton.cdiv(n, PAD_BC)
        _unpad_copy[(triton.cdiv(rows, PAD_BR) * n_cb,)](ys, y, rows, n_cb, n, nw // 8,
                                                         BR=PAD_BR, BC=PAD_BC, num_warps=4)
    return None
