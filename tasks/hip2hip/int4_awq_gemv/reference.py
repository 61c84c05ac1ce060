import torch

GROUP = 128


def reference(qweight, scales, x, batch, n, k):
    """y = x @ W^T with W[j, i] = (nibble i of row j - 8) * scales[j, i // 128], in the dtype
    of x (the harness passes float32 for x and scales, int32 for qweight). Rows of W are
    made in chunks to bound the memory of the intermediates."""
    assert qweight.shape == (n, k // 8) and scales.shape == (n, k // GROUP) and x.shape == (batch, k)
    shifts = torch.arange(0, 32, 4, device=qweight.device, dtype=torch.int32)
    y = torch.empty((batch, n), dtype=x.dtype, device=x.device)
    chunk = max(1, (1 << 25) // k)
    for j0 in range(0, n, chunk):
        j1 = min(n, j0 + chunk)
        codes = (qweight[j0:j1, :, None] >> shifts) & 15                    # [rows, k / 8, 8]
        w = codes.reshape(j1 - j0, k).to(x.dtype) - 8.0
        w = (w.view(j1 - j0, k // GROUP, GROUP) * scales[j0:j1, :, None]).view(j1 - j0, k)
        y[:, j0:j1] = x @ w.t()
    return y
