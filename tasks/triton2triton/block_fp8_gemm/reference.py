import torch

BLOCK = 128


def reference(a, a_scale, b, b_scale, m, n, k):
    """Dequantise both operands with their block scales and multiply, in the scales' floating
    dtype (fp64 when the harness upcasts the fp32 scales: exact products, accurate sums);
    y is fp16."""
    dt = a_scale.dtype
    kb = k // BLOCK
    a_deq = (a.to(dt).view(m, kb, BLOCK) * a_scale[:, :, None]).view(m, k)
    b_rows = b_scale.to(dt).repeat_interleave(BLOCK, dim=0)[:n]                 # [n, kb]
    b_deq = (b.to(dt).view(n, kb, BLOCK) * b_rows[:, :, None]).view(n, k)
    return (a_deq @ b_deq.t()).to(torch.float16)
