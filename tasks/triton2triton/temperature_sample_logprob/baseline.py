"""Starting kernel for temperature sampling with the sampled token's logprob, written the way
serving code writes it: an autotuned kernel (block size and warps, keyed on the vocabulary),
a heuristic that drops the bound checks when the block divides the row, @triton.jit helpers
for the online log-sum-exp and the running argmax, libdevice exp / log, and the row strides
passed as do_not_specialize arguments (one compiled kernel for any layout of the logits).

One program per row streams the row once in blocks: each lane keeps a running max and sum of
exp(logit / T) (rescaled when the max grows) and the best p / q candidate it has seen; the
lanes are combined at the end and the sampled token's logit is read back for its logprob.
Correct for every shape; a decode batch gives only `batch` programs, each walking its
32k..152k entries one block at a time.
"""

import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _online_lse(m, s, x):
    new_m = tl.maximum(m, x)
    return new_m, s * libdevice.exp(m - new_m) + libdevice.exp(x - new_m)


@triton.jit
def _running_argmax(best, best_idx, score, idx):
    take = score > best                 # strict: a lane keeps its earliest (lowest) index
    return tl.where(take, score, best), tl.where(take, idx, best_idx)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_V": 1024}, num_warps=4),
        triton.Config({"BLOCK_V": 2048}, num_warps=8),
    ],
    key=["vocab"],
)
@triton.heuristics({"EVEN_V": lambda args: args["vocab"] % args["BLOCK_V"] == 0})
@triton.jit(do_not_specialize=["stride_l", "stride_q"])
def _sample_row(logits_ptr, temp_ptr, q_ptr, ids_ptr, logprob_ptr, vocab, stride_l, stride_q,
                BLOCK_V: tl.constexpr, EVEN_V: tl.constexpr):
    row = tl.program_id(0)
    l_row = logits_ptr + row.to(tl.int64) * stride_l
    q_row = q_ptr + row.to(tl.int64) * stride_q
    inv_t = 1.0 / tl.load(temp_ptr + row)
    lanes = tl.arange(0, BLOCK_V)

    m = tl.full([BLOCK_V], -1.0e30, tl.float32)
    s = tl.zeros([BLOCK_V], dtype=tl.float32)
    best = tl.full([BLOCK_V], float("-inf"), tl.float32)
    best_idx = tl.zeros([BLOCK_V], dtype=tl.int32)
    for start in range(0, vocab, BLOCK_V):
        idx = start + lanes
        if EVEN_V:
            x = tl.load(l_row + idx) * inv_t
            q = tl.load(q_row + idx)
        else:
            ok = idx < vocab
            x = tl.where(ok, tl.load(l_row + idx, mask=ok, other=0.0) * inv_t, float("-inf"))
            q = tl.load(q_row + idx, mask=ok, other=1.0)
        m, s = _online_lse(m, s, x)
        best, best_idx = _running_argmax(best, best_idx, x - libdevice.log(q), idx)

    row_max = tl.max(m, axis=0)
    lse = row_max + libdevice.log(tl.sum(s * libdevice.exp(m - row_max), axis=0))
    top = tl.max(best, axis=0)
    token = tl.min(tl.where(best == top, best_idx, 2147483647), axis=0)
    tl.store(ids_ptr + row, token)
    tl.store(logprob_ptr + row, tl.load(l_row + token) * inv_t - lse)


def temperature_sample_logprob(logits, temperature, q, token_ids, logprobs, batch, vocab):
    _sample_row[(batch,)](logits, temperature, q, token_ids, logprobs, vocab, logits.stride(0), q.stride(0))
    return None
