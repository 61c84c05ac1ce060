import torch
import torch.nn.functional as F


def reference(weight, indices, offsets, num_embeddings, dim, bags, nnz):
    """Mean of the table rows of each bag (F.embedding_bag, mode="mean"; bag g holds
    indices[offsets[g]:offsets[g + 1]], the last one ends at nnz, empty bags give zeros).
    Called with the declared fp32 table this is the eager baseline; called with the fp64
    upcast it gives the expected output."""
    return F.embedding_bag(indices, weight, offsets, mode="mean")


def make_inputs(config, generator, device):
    """Bag start offsets (offsets[0] = 0). About 1% of the bags are empty; every other bag
    holds one index plus a share of the remaining nnz - (non-empty bags) indices cut at
    random points, so sizes vary (roughly geometric around nnz / bags)."""
    bags, nnz = int(config["bags"]), int(config["nnz"])
    empty = torch.rand(bags, generator=generator, device=device) < 0.01
    empty[0] = False
    filled = int((~empty).sum())
    rest = nnz - filled
    cuts = torch.randint(0, rest + 1, (filled - 1,), generator=generator, device=device)
    cuts, _ = torch.sort(cuts)
    edges = torch.cat([torch.zeros(1, dtype=torch.int64, device=device), cuts,
                       torch.full((1,), rest, dtype=torch.int64, device=device)])
    sizes = torch.zeros(bags, dtype=torch.int64, device=device)
    sizes[~empty] = 1 + torch.diff(edges)
    offsets = torch.cumsum(sizes, 0) - sizes
    return {"offsets": offsets}
