import torch

# column 8 m + j of a packed word sits in nibble REV[j]
REV = [0, 4, 1, 5, 2, 6, 3, 7]


def _unpack(words):
    """[R, N / 8] int32 -> [R, N] int64 nibbles in column order."""
    shifts = torch.tensor([4 * r for r in REV], dtype=torch.int64, device=words.device)
    w = words.to(torch.int64) & 0xFFFFFFFF
    return ((w[:, :, None] >> shifts[None, None, :]) & 0xF).reshape(words.shape[0], -1)


def reference(qweight, qzeros, scales, k, n, group_size):
    """AWQ dequantisation, in the dtype of scales it is given (float32 for this fp16 task).
    Returns [K, N]."""
    q = _unpack(qweight)                                   # [K, N]
    z = _unpack(qzeros)                                    # [K / g, N]
    d = (q.view(k // group_size, group_size, n) - z[:, None, :]).to(scales.dtype)
    return (d * scales[:, None, :]).reshape(k, n)
