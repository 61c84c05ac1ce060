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
    holds one index plus a share of the remaining nnz - (non-empty bags) indices, as if cut
    at random points, so sizes vary (roughly geometric around nnz / bags). The sizes are fixed
    by the config (the expected order statistics of random cuts: the same work for every
    seed); the seed draws which bag gets which size (bag 0 is never empty)."""
    bags, nnz = int(config["bags"]), int(config["nnz"])
    filled = bags - round(0.01 * (bags - 1))
    rest = nnz - filled
    # expected i-th smallest of `filled` spacings of [0, rest] cut at random points
    share = torch.cumsum(1.0 / torch.arange(filled, 0, -1, dtype=torch.float64), 0) * (rest / filled)
    extra = share.floor().to(torch.int64)
    top = torch.argsort(share - extra, descending=True)[:rest - int(extra.sum())]
    extra[top] += 1
    sizes = torch.zeros(bags, dtype=torch.int64)
    sizes[:filled] = 1 + extra
    sizes = sizes.to(device)[torch.randperm(bags, generator=generator, device=device)]
    if int(sizes[0]) == 0:
        j = int(torch.nonzero(sizes)[0, 0])
        sizes[0], sizes[j] = sizes[j].clone(), 0
    offsets = torch.cumsum(sizes, 0) - sizes
    return {"offsets": offsets}
