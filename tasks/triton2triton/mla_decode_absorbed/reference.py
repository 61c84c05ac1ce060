import torch

LATENT = 512     # kv_lora_rank: the value part of each cache row
ROPE = 64        # rotary key part (keys are LATENT + ROPE = 576 values)


def reference(q, kv_cache, batch, q_heads, kv_len, sm_scale):
    """Absorbed MLA decode attention, computed in the dtype it is given (the harness upcasts
    the fp16 inputs to fp32). All heads attend to the same latent cache."""
    s = torch.einsum("bhd,bnd->bhn", q, kv_cache) * sm_scale
    p = torch.softmax(s, dim=-1)
    return torch.einsum("bhn,bnd->bhd", p, kv_cache[:, :, :LATENT])
