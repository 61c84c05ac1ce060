import torch


def reference(q, k_cache, v_cache, block_tables, context_lens, num_seqs, q_heads, kv_heads, head_dim, block_size,
              max_context, max_blocks, scale):
    """Paged GQA decode attention, one sequence at a time, in the dtype it is given (the
    harness passes float32 for the fp16 tensors). Only the blocks that hold the first
    context_lens[i] tokens are gathered."""
    group = q_heads // kv_heads
    out = torch.empty_like(q)
    for i, n in enumerate(context_lens.tolist()):
        used = block_tables[i, : (n + block_size - 1) // block_size].long()
        keys = k_cache[used].reshape(-1, kv_heads, head_dim)[:n].permute(1, 2, 0)      # [kv, d, n]
        vals = v_cache[used].reshape(-1, kv_heads, head_dim)[:n].permute(1, 0, 2)      # [kv, n, d]
        qg = q[i].reshape(kv_heads, group, head_dim)
        p = torch.softmax(torch.bmm(qg, keys) * scale, dim=-1)                         # [kv, group, n]
        out[i] = torch.bmm(p, vals).reshape(q_heads, head_dim)
    return out


def make_inputs(config, generator, device):
    """context_lens: one exactly max_context, the others the evenly spaced quantiles of the
    uniform distribution on [1, max_context] (the config fixes the lengths, the seed which
    sequence gets which); block_tables a random permutation of the num_seqs * max_blocks
    pool blocks."""
    n = int(config["num_seqs"])
    max_context, block_size = int(config["max_context"]), int(config["block_size"])
    max_blocks = (max_context + block_size - 1) // block_size
    rest = [1 + (2 * i + 1) * max_context // (2 * (n - 1)) for i in range(n - 1)]
    fixed = torch.tensor([max_context] + rest, dtype=torch.int64)
    lens = fixed.to(device)[torch.randperm(n, generator=generator, device=device)]
    table = torch.randperm(n * max_blocks, generator=generator, device=device).view(n, max_blocks)
    return {"block_tables": table.to(torch.int32), "context_lens": lens.to(torch.int32)}
