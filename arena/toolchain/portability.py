"""A lint for HIP code that runs on both vendors: literal warp widths.

A warp is 32 lanes on NVIDIA GPUs and a wavefront 64 on AMD's CDNA GPUs (32 on RDNA). Code
that writes the width as a number builds on both and is wrong on one: a ``WARP_SIZE`` of 64
reduces half-empty warps on NVIDIA, ``__shfl_xor(v, 32)`` reads outside a 32-wide warp,
``threadIdx.x % 32`` splits a wave in two. The compilers say nothing. ``warp_width_warnings``
finds the usual forms and says where; the record (``build.portability``) and the feedback
tool carry them. A warning is advice, never a verdict: ``warpSize`` (or a width checked
against it) is what portable code uses.
"""

from __future__ import annotations

import re

_WIDTH_NAME = r"(?:WARP_?SIZE|WAVE_?SIZE|WAVEFRONT_?SIZE|kWarpSize|kWaveSize|warp_size|wave_size|LANES|kLanes)"
_DEFINE = re.compile(rf"^[ \t]*#[ \t]*define\s+({_WIDTH_NAME})\s+\(?\s*(32|64)\s*\)?\s*$", re.MULTILINE)
_CONST = re.compile(rf"\b(?:constexpr|const)\s+(?:static\s+)?[\w:]+\s+({_WIDTH_NAME})\s*(?:=|\{{)\s*(32|64)\b")
_LANE = re.compile(r"\bthreadIdx\.x\s*(%|&|/|>>)\s*(31|32|63|64|5|6)\b")
_SHFL = re.compile(r"\b(__shfl(?:_xor|_down|_up)?(?:_sync)?)\s*\(")


def _line(source: str, pos: int) -> int:
    return source.count("\n", 0, pos) + 1


def _args(source: str, start: int) -> list[str]:
    """The top-level arguments of the call whose '(' is at ``start``."""
    depth, args, cur = 0, [], []
    for ch in source[start:start + 2000]:
        if ch in "([{":
            depth += 1
            if depth == 1:
                continue
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                args.append("".join(cur).strip())
                return args
        elif ch == "," and depth == 1:
            args.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    return args


def warp_width_warnings(source: str) -> list[str]:
    """One line per place the file writes a warp width as a number, in the file's order."""
    text = re.sub(r"//[^\n]*", "", source)           # comments say what they like
    out = []
    for m in _DEFINE.finditer(text):
        out.append(f"line {_line(text, m.start())}: {m.group(1)} is defined as {m.group(2)}: a warp is 32 lanes on "
                   "NVIDIA and a wavefront 64 on AMD CDNA; use warpSize")
    for m in _CONST.finditer(text):
        out.append(f"line {_line(text, m.start())}: {m.group(1)} = {m.group(2)}: a warp is 32 lanes on NVIDIA and a "
                   "wavefront 64 on AMD CDNA; use warpSize")
    for m in _LANE.finditer(text):
        out.append(f"line {_line(text, m.start())}: threadIdx.x {m.group(1)} {m.group(2)} takes a lane or warp index "
                   "for one warp width; use warpSize")
    for m in _SHFL.finditer(text):
        name, args = m.group(1), _args(text, m.end() - 1)
        lane_args = args[1:] if not name.endswith("_sync") else args[2:]
        # the lane or offset (an offset of 32 or more leaves a 32-wide warp), then the width
        offset = lane_args[0] if lane_args else ""
        width = lane_args[1] if len(lane_args) > 1 else ""
        if width in ("32", "64"):
            out.append(f"line {_line(text, m.start())}: {name} with a width of {width}: use warpSize")
        elif offset.isdigit() and int(offset) >= 32:
            out.append(f"line {_line(text, m.start())}: {name} by {offset} lanes: beyond a 32-lane NVIDIA warp "
                       "(only an AMD wavefront has them); derive it from warpSize")
    return sorted(out, key=lambda w: int(w.split(":")[0].split()[1]))
