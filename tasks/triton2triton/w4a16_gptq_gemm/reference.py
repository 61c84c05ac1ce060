import torch


def reference(x, qweight, scales, zeros, m, n, k):
    """y = x @ w with w[l, j] = (q[l, j] - z[l // 128, j]) * s[l // 128, j], q unpacked from
    qweight (eight 4-bit values per int32 along k, row 8 p + r in bits 4 r .. 4 r + 3).
    Computed in the dtype it is given (fp16 is upcast to fp32 first); the result is fp16."""
    xf = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    shifts = torch.arange(0, 32, 4, device=qweight.device, dtype=torch.int32)
    q = (qweight[:, None, :] >> shifts[None, :, None]) & 0xF            # [k / 8, 8, n]
    q = q.reshape(k, n).to(xf.dtype)
    z = zeros.to(xf.dtype).repeat_interleave(128, dim=0)                 # [k, n]
    s = scales.to(xf.dtype).repeat_interleave(128, dim=0)
    w = (q - z) * s
    return (xf @ w).to(torch.float16)
