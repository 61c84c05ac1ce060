import torch

CHUNK = 64


def reference(k, v, g, batch, seq_len, heads, dk, dv):
    """The state at every chunk boundary of chunked linear attention with a scalar decay per
    (step, head). Computed chunk by chunk in the dtype given (fp32, or fp64 for the expected
    output). Returns (h [batch, chunks, heads, dk, dv] fp16, final_state [batch, heads, dk, dv])."""
    dt = g.dtype
    chunks = (seq_len + CHUNK - 1) // CHUNK
    pad = chunks * CHUNK - seq_len
    # zero keys and zero log-decay on the padding: the padded steps change nothing
    kp = torch.nn.functional.pad(k.to(dt), (0, 0, 0, 0, 0, pad)).view(batch, chunks, CHUNK, heads, dk)
    vp = torch.nn.functional.pad(v.to(dt), (0, 0, 0, 0, 0, pad)).view(batch, chunks, CHUNK, heads, dv)
    gp = torch.nn.functional.pad(g, (0, 0, 0, pad)).view(batch, chunks, CHUNK, heads)
    G = gp.cumsum(dim=2)                                        # [b, c, t, h]
    gend = G[:, :, -1, :]                                       # [b, c, h]
    kd = kp * torch.exp(gend[:, :, None, :] - G)[..., None]     # decayed keys
    local = torch.einsum("bcthk,bcthv->bchkv", kd, vp)          # each chunk's own contribution
    decay = torch.exp(gend)
    h = torch.empty(batch, chunks, heads, dk, dv, dtype=dt, device=g.device)
    state = torch.zeros(batch, heads, dk, dv, dtype=dt, device=g.device)
    for c in range(chunks):
        h[:, c] = state
        state = state * decay[:, c, :, None, None] + local[:, c]
    return h.to(torch.float16), state
