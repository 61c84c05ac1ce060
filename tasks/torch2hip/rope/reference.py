import torch


def reference(q, cos, sin, tokens, heads, head_dim):
    """Rotary position embedding, GPT-NeoX / Llama (rotate-half) layout, as Hugging Face writes it.

    q: [tokens, heads, head_dim]; cos, sin: [tokens, head_dim // 2], the angles of each token's
    position. With x1 = q[..., :half] and x2 = q[..., half:]:
        out = cat(x1 * cos - x2 * sin, x2 * cos + x1 * sin).
    Called with the declared dtypes (fp16 q, fp32 tables) this is the eager baseline: table
    duplication, a negation and a concatenation of q's halves, products that promote to fp32,
    the sum and a cast back to fp16. Called with the upcasts it gives the expected output."""
    c = torch.cat((cos, cos), dim=-1).unsqueeze(1)  # [tokens, 1, head_dim]
    s = torch.cat((sin, sin), dim=-1).unsqueeze(1)
    half = head_dim // 2
    x1 = q[..., :half]
    x2 = q[..., half:]
    rotated = torch.cat((-x2, x1), dim=-1)
    return (q * c + rotated * s).to(q.dtype)


def make_inputs(config, generator, device):
    """cos / sin tables of a chunk of consecutive positions (a prefill chunk starting at a
    random offset in [0, 8192)), base 10000 as in Llama 2 / GPT-NeoX: angle[t, i] =
    (offset + t) * 10000 ** (-2 i / head_dim). Angles in fp64, tables rounded to fp32."""
    tokens, head_dim = int(config["tokens"]), int(config["head_dim"])
    offset = torch.randint(0, 8192, (1,), generator=generator, device=device).to(torch.float64)
    positions = offset + torch.arange(tokens, device=device, dtype=torch.float64)
    inv_freq = 10000.0 ** (-torch.arange(0, head_dim, 2, device=device, dtype=torch.float64) / head_dim)
    angles = positions[:, None] * inv_freq[None, :]
    return {"cos": angles.cos().to(torch.float32), "sin": angles.sin().to(torch.float32)}
