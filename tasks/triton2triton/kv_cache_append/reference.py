import torch


def reference(key, value, key_cache_in, value_cache_in, slot_mapping,
              tokens, blocks, block_size, kv_heads, head_dim):
    """The caches after writing token t's key / value into slot slot_mapping[t] (skipped when
    -1), in vLLM's paged layout (x = 8). Returns (key_cache_out, value_cache_out)."""
    kc = key_cache_in.clone()
    vc = value_cache_in.clone()
    s = slot_mapping.to(torch.int64)
    keep = s >= 0
    s = s[keep]
    blk, off = s // block_size, s % block_size
    # advanced indices around slices: the indexed dims come first -> [n, kv_heads, head_dim / 8, 8]
    kc[blk, :, :, off, :] = key[keep].view(-1, kv_heads, head_dim // 8, 8).to(kc.dtype)
    vc[blk, :, :, off] = value[keep].to(vc.dtype)                    # [n, kv_heads, head_dim]
    return kc, vc


def make_inputs(config, generator, device):
    """Slots of one step from a paged allocator: tokens // 128 padding tokens at the end
    (slot -1); the others form `seqs` sequences of random lengths (cut points drawn uniformly;
    seqs == tokens is a decode step, one token each); sequence i starts at a random position
    of its first block (its cached prefix) and fills consecutive slots of blocks drawn from a
    shuffled free list, never sharing a block with another sequence. The lengths and start
    positions are drawn from a generator seeded by the config (fixed for a config); the seed
    draws the order of the sequences and the free list."""
    tokens, blocks, bs = int(config["tokens"]), int(config["blocks"]), int(config["block_size"])
    seqs = int(config.get("seqs", 1))
    fixed = torch.Generator().manual_seed(0x6B76 + tokens * 1_000_003 + seqs * 10_007 + blocks * 101 + bs)

    pad = tokens // 128
    real = tokens - pad
    slots = torch.full((tokens,), -1, dtype=torch.int64)
    if real > 0:
        nseq = max(1, min(seqs, real))
        cuts = torch.sort(torch.randperm(max(real - 1, 1), generator=fixed)[: nseq - 1] + 1).values
        bounds = torch.cat([torch.zeros(1, dtype=torch.int64), cuts, torch.full((1,), real, dtype=torch.int64)])
        first = torch.randint(0, bs, (nseq,), generator=fixed)
        order = torch.randperm(nseq, generator=generator, device=device).cpu()
        lengths = (bounds[1:] - bounds[:-1])[order]
        first = first[order]
        bounds = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(lengths, 0)])
        nblocks = (first + lengths + bs - 1) // bs
        vstart = bs * (torch.cumsum(nblocks, 0) - nblocks) + first       # virtual start of each sequence
        seq = torch.repeat_interleave(torch.arange(nseq), lengths)
        v = vstart[seq] + torch.arange(real) - bounds[:-1][seq]
        free = torch.randperm(blocks, generator=generator, device=device).cpu()
        slots[:real] = free[v // bs] * bs + v % bs
    return {"slot_mapping": slots.to(torch.int32).to(device)}
