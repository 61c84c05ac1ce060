import torch


def reference(x, rows, vocab, k):
    """The k largest entries of every row in descending order, ties by the smaller column
    (a stable descending sort), computed in the dtype it is given (the harness passes float64
    for this fp32 task). Rows are sorted in groups to bound the memory of the sort."""
    assert x.shape == (rows, vocab)
    values = torch.empty((rows, k), dtype=x.dtype, device=x.device)
    indices = torch.empty((rows, k), dtype=torch.int64, device=x.device)
    step = max(1, 2**24 // vocab)
    for r0 in range(0, rows, step):
        v, i = torch.sort(x[r0:r0 + step], dim=-1, descending=True, stable=True)
        values[r0:r0 + step] = v[:, :k]
        indices[r0:r0 + step] = i[:, :k]
    return values, indices
