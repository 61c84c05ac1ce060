"""Starting kernel for the ALiBi attention softmax: correct for every shape, simple.

One program per query row (b, h, i) walks the row's keys in chunks of 256 three times:
the maximum of scores - slope * |i - j|, then the sum of exp(. - max), then the writes of
exp(. - max) / sum. The bias is recomputed in every pass. Default launch settings.
"""

import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _alibi_softmax_row(s_ptr, slopes_ptr, p_ptr, heads, seq, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)            # (b * heads + h) * seq + i
    i = row % seq
    h = (row // seq) % heads
    slope = tl.load(slopes_ptr + h)
    base = row * seq
    m = tl.full([BLOCK], -float("inf"), dtype=tl.float32)
    for start in range(0, seq, BLOCK):
        j = start + tl.arange(0, BLOCK)
        mask = j < seq
        x = tl.load(s_ptr + base + j, mask=mask, other=0.0).to(tl.float32)
        x = x - slope * tl.abs(i - j).to(tl.float32)
        m = tl.maximum(m, tl.where(mask, x, -float("inf")))
    row_max = tl.max(m, axis=0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, seq, BLOCK):
        j = start + tl.arange(0, BLOCK)
        mask = j < seq
        x = tl.load(s_ptr + base + j, mask=mask, other=0.0).to(tl.float32)
        x = x - slope * tl.abs(i - j).to(tl.float32)
        acc += tl.where(mask, tl.exp(x - row_max), 0.0)
    inv = 1.0 / tl.sum(acc, axis=0)
    for start in range(0, seq, BLOCK):
        j = start + tl.arange(0, BLOCK)
        mask = j < seq
        x = tl.load(s_ptr + base + j, mask=mask, other=0.0).to(tl.float32)
        x = x - slope * tl.abs(i - j).to(tl.float32)
        tl.store(p_ptr + base + j, (tl.exp(x - row_max) * inv).to(tl.float16), mask=mask)


def alibi_softmax_bidirectional(scores, slopes, probs, batch, heads, seq):
    _alibi_softmax_row[(batch * heads * seq,)](scores, slopes, probs, heads, seq, BLOCK=BLOCK)
    return None
