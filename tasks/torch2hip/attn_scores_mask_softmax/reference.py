import torch


def reference(q, k, batch, heads, seq, scale):
    """Causal attention probabilities, GPT-2's eager attention up to the product with V.

    q, k: [batch, heads, seq, 64]. Called with the declared fp16 tensors this is the eager
    baseline: the batched QK^T GEMM (fp16 scores), the scaling, the causal mask (built per
    call, as Hugging Face builds it) applied with masked_fill of the dtype's lowest value, and
    the softmax (fp32 inside, fp16 out). Called with fp32 upcasts it gives the expected output,
    every step in fp32."""
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    causal = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(causal, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1)
