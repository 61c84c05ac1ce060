"""The random split: configs drawn at evaluation time from a task's declared shape space.

Draws use a run secret (``os.urandom`` unless a seed is given), so an agent cannot know
them in advance; the seed and the draws go into the run's records, never into a
workspace. Values lean towards the awkward: log-uniform over the range, then odd and
not a power of two where the space allows. A draw that breaks the space's constraint, or
the memory / work limits of the device, is redrawn.
"""

from __future__ import annotations

import math
import os
import random
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from arena.errors import ArenaError
from arena.taskdef import formula
from arena.taskdef.loader import Config, Task

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1, "int8": 1,
               "uint8": 1, "int16": 2, "int32": 4, "int64": 8, "bool": 1}
MAX_TRIES = 5000


@dataclass(frozen=True)
class DrawLimits:
    """What a drawn config may cost: bytes of all inputs and outputs, and the roofline
    estimate of the work (bytes and FLOPs from the task's formulas)."""

    max_tensor_bytes: float = 4e9
    min_roofline_bytes: float = 0.0
    max_roofline_bytes: float = 4e9
    max_flops: float = 2e12


def new_secret() -> int:
    return int.from_bytes(os.urandom(8), "little") >> 1


def _is_pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


def draw_value(rng: random.Random, spec: Mapping[str, Any]) -> int | float:
    if "choices" in spec:
        choice: int | float = rng.choice(list(spec["choices"]))
        return choice
    lo, hi = int(spec["min"]), int(spec["max"])
    step = int(spec.get("multiple_of", 1))
    lo_k, hi_k = math.ceil(lo / step), hi // step
    if hi_k < lo_k:
        raise ArenaError(f"no multiple of {step} between {lo} and {hi}", key="shape_space")
    # log-uniform over the multiples, so small and large sizes are both drawn
    k = int(round(math.exp(rng.uniform(math.log(max(lo_k, 1)), math.log(max(hi_k, 1))))))
    k = min(max(k, lo_k), hi_k)
    if step == 1 and k % 2 == 0 and rng.random() < 0.6:
        k = k + 1 if k + 1 <= hi_k else k - 1 if k - 1 >= lo_k else k
    if _is_pow2(k * step) and rng.random() < 0.9:
        for cand in (k + 1, k - 1, k + 3):
            if lo_k <= cand <= hi_k and not _is_pow2(cand * step):
                k = cand
                break
    return max(lo_k, min(k, hi_k)) * step


def tensor_bytes(task: Task, env: Mapping[str, Any], specs: Iterable[Any] | None = None) -> int:
    """Bytes of the signature's tensors (``specs``: only these; default every input and output):
    the memory each takes (none for an absent optional input; a strided one's span)."""
    specs = (*task.inputs, *task.outputs) if specs is None else specs
    return sum(task.storage_elements(s, env) * DTYPE_BYTES[s.dtype] for s in specs)


def draw_configs(task: Task, n: int, seed: int, limits: DrawLimits = DrawLimits()) -> list[Config]:
    """n configs from the task's shape space, reproducible for (task, seed)."""
    space = {k: v for k, v in task.shape_space.items() if k != "constraint"}
    constraint = task.shape_space.get("constraint")
    rng = random.Random(f"{task.id}:{seed}")
    out: list[Config] = []
    tries = 0
    while len(out) < n:
        tries += 1
        if tries > MAX_TRIES:
            raise ArenaError(f"no config of the shape space fits the limits after {MAX_TRIES} draws "
                             f"({len(out)} of {n} drawn)", path=task.path / "task.yaml", key="shape_space")
        params = {k: draw_value(rng, spec) for k, spec in space.items()}
        try:
            if constraint and not formula.evaluate(constraint, params):
                continue
            env = task.env(Config("random", len(out), "", params))
            if tensor_bytes(task, env) > limits.max_tensor_bytes:
                continue
            flops, nbytes = task.roofline_for(Config("random", len(out), "", params))
        except (formula.FormulaError, ArenaError):
            continue
        if not limits.min_roofline_bytes <= nbytes <= limits.max_roofline_bytes or flops > limits.max_flops:
            continue
        name = "random-" + "-".join(f"{k}{v}" for k, v in params.items())
        if any(c.name == name for c in out):
            continue
        out.append(Config("random", len(out), name, params))
    return out


def limits_for(device_kind: str, memory_bytes: int | None) -> DrawLimits:
    """Draw limits that keep a random config inside the timing window on the device."""
    if device_kind == "cpu":
        return DrawLimits(max_tensor_bytes=8e6, max_roofline_bytes=8e6, max_flops=5e8)
    mem = memory_bytes or 16 * 2**30
    return DrawLimits(max_tensor_bytes=min(4e9, mem / 16), min_roofline_bytes=0.0, max_roofline_bytes=2e9,
                      max_flops=2e12)
