"""Inputs for one config from a seed: random with structure, never zeros, on the device.

Each input draws from its own generator (seed mixed with the input's position), so
changing one input's seed changes that input alone (the sensitivity check relies on it).
An optional input a config leaves out is None. A strided input (``stride`` in the signature)
is drawn for the memory its strides span and given as a view of it (``as_strided``): one
with a stride of 0 repeats its values along that dimension. ``storage`` is that memory, the
one thing copied, cloned and compared of an input.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Mapping

import torch

from arena.errors import ArenaError, ArenaException
from arena.taskdef import formula
from arena.taskdef.loader import InputSpec, Task

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float8_e4m3fn": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "bool": torch.bool,
}
_SEED_MIX = 0x9E3779B1
# the dtypes of inputs that shape a call's work rather than feed its arithmetic: indices, offsets, counts,
# masks. A replayed candidate's call is recorded on its set's own values of these alone
# (arena.evaluation.trusted.calls); 8-bit
# integers are quantized values, not structure
STRUCTURAL = ("bool", "int16", "int32", "int64")


def structural(spec: InputSpec) -> bool:
    """Does an input's value shape a call's work (``STRUCTURAL``)?"""
    return spec.dtype in STRUCTURAL


def has_structural(task: Task, env: Mapping[str, Any]) -> bool:
    """Has a config an input whose values shape a call's work?"""
    return any(structural(s) and task.present(s, env) for s in task.inputs)


def upcast(t: torch.Tensor) -> torch.Tensor:
    """The precision the reference computes in: fp16/bf16/fp8 -> fp32, fp32 -> fp64."""
    if t.dtype in (torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2):
        return t.to(torch.float32)
    if t.dtype == torch.float32:
        return t.to(torch.float64)
    return t


def fp32_as_fp32() -> None:
    """This process computes fp32 in fp32: the reference of an fp16 task upcast to fp32, and the
    task's own reference run as the torch2hip starting point. cuDNN's default for fp32
    convolutions is TF32 (a 10-bit mantissa), which does not meet an fp32 task's tolerance, as
    no candidate that used it would: on an H100, KernelBench's fp32 convolutions run as their own
    starting points had norm errors of 2.4e-4 to 3.4e-4 against the fp64 reference (the bound is
    1e-5). Set in the trusted process before it forks the others, and in any process that runs
    the task's reference as a side; a candidate may set its own."""
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


class ReferenceContractError(ArenaException, ValueError):
    """The task's reference returned what its signature does not allow."""


def run_reference(fn: Any, task: Task, ins: Mapping[str, torch.Tensor | None], scalars: list) -> list:
    """The reference's contract (CONTRIBUTING.md): ``fn`` is called with upcast clones of the
    inputs in signature order (None for an absent optional input), then the scalars; it
    returns the outputs (one tensor, or a tuple in signature order; None where the signature
    has no outputs) and updates each inout input's clone in place. Returns the outputs, then
    the inout inputs' clones as the call left them (``Task.compared``; None for an absent one)."""
    clones = [None if t is None else upcast(t.clone()) for t in ins.values()]
    result = fn(*clones, *scalars)
    results = (
        [] if result is None and not task.outputs else list(result) if isinstance(result, (tuple, list)) else [result]
    )
    if len(results) != len(task.outputs):
        raise ReferenceContractError(
            f"the reference returned {len(results)} outputs, the signature has {len(task.outputs)}"
        )
    for spec, r in zip(task.outputs, results):
        if not isinstance(r, torch.Tensor):
            raise ReferenceContractError(
                f"the reference returned {type(r).__name__} for output {spec.name!r}, not a tensor"
            )
    # an output the reference computed elsewhere (a test's own reference on the CPU) is compared where the inputs are
    where = next((c.device for c in clones if c is not None), None)
    if where is not None:
        results = [r if r.device == where else r.to(where) for r in results]
    return results + [c for c, spec in zip(clones, task.inputs) if spec.inout]


def input_seed(seed: int, position: int) -> int:
    return (seed * 1_000_003 + (position + 1) * _SEED_MIX) % (2**63 - 1)


def generator(seed: int, device: str) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g


def storage(t: torch.Tensor) -> torch.Tensor:
    """The memory a tensor spans, as a 1-D view from its first element to its last (the
    tensor itself where it is contiguous): what is copied and compared of a strided input."""
    if t.is_contiguous():
        return t.reshape(-1)
    n = 1 + sum((d - 1) * s for d, s in zip(t.shape, t.stride())) if t.numel() else 0
    return t.as_strided((n,), (1,))


def copy_into(dst: torch.Tensor, src: torch.Tensor) -> None:
    """``src``'s values into ``dst`` (same shape, strides and dtype), memory for memory (a
    tensor with a stride of 0 cannot be written through its view)."""
    storage(dst).copy_(storage(src))


def clone(t: torch.Tensor | None) -> torch.Tensor | None:
    """A copy with the same strides (None stays None)."""
    if t is None or t.is_contiguous():
        return None if t is None else t.clone()
    return storage(t).clone().as_strided(t.shape, t.stride())


def empty_input(task: Task, spec: InputSpec, env: Mapping[str, Any], device: str) -> torch.Tensor | None:
    """An unfilled buffer of one input as the signature lays it out (None if absent)."""
    if not task.present(spec, env):
        return None
    strides = task.strides(spec, env)
    shape = task.shape(spec, env)
    if strides is None:
        return torch.empty(shape, dtype=DTYPES[spec.dtype], device=device)
    return torch.empty_strided(shape, strides, dtype=DTYPES[spec.dtype], device=device)


def make_one(
    spec: InputSpec,
    shape: tuple[int, ...],
    env: Mapping[str, Any],
    gen: torch.Generator,
    device: str,
    strides: tuple[int, ...] | None = None,
) -> torch.Tensor:
    """One input drawn as its init says; strided: drawn for the memory its strides span."""
    if strides is not None:
        from arena.taskdef.loader import storage_elements

        flat = make_one(spec, (storage_elements(shape, strides),), env, gen, device)
        return flat.as_strided(shape, strides)
    init = spec.init
    kind = init["kind"]
    dtype = DTYPES[spec.dtype]
    if kind == "bernoulli":
        return torch.rand(shape, generator=gen, device=device) < float(init.get("p", 0.5))
    # drawn in fp32 and changed in place: one fp32 buffer of the input at a time beside the result
    # (``draw_bytes`` counts it), where out-of-place arithmetic had held two or three
    if kind == "randint":
        low = int(formula.evaluate(init.get("low", 0), env))
        high = int(formula.evaluate(init["high"], env))
        drawn = torch.randint(low, high, shape, generator=gen, device=device, dtype=torch.int64)
        if "scale" not in init and "offset" not in init:
            return drawn.to(dtype)
        x = drawn.to(torch.float32)      # integers scaled or offset (hinge targets: {0, 1} * 2 - 1)
        del drawn
    elif kind == "normal":
        x = torch.randn(shape, generator=gen, device=device)
        x.mul_(float(init.get("std", 1.0))).add_(float(init.get("mean", 0.0)))
    elif kind == "uniform":
        low = float(formula.evaluate(init.get("low", -1.0), env))
        high = float(formula.evaluate(init.get("high", 1.0), env))
        x = torch.rand(shape, generator=gen, device=device)
        x.mul_(high - low).add_(low)
    elif kind == "ones_plus_noise":
        x = torch.randn(shape, generator=gen, device=device)
        x.mul_(float(init.get("std", 0.1))).add_(1.0)
    else:
        raise ArenaError(f"unknown init kind {kind!r}", key=f"signature.inputs.{spec.name}.init")
    if "scale" in init:
        x.mul_(float(init["scale"]))
    if "offset" in init:
        x.add_(float(init["offset"]))
    if dtype in (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64):
        return x.round_().to(dtype)
    return x.to(dtype)


def draw_bytes(task: Task, env: Mapping[str, Any]) -> int:
    """Device memory that drawing one input set holds beyond the inputs it returns, at most
    (for the GPU's memory account: ``arena.evaluation.trusted.correctness.check_bytes``). The
    inputs are drawn one at a time, so the largest draw counts: an fp32 buffer for a float
    input of a narrower dtype and for a mask (``make_one`` changes it in place), an int64 one
    for integers below 64 bits; a task's own ``make_inputs`` is taken to hold two fp32
    temporaries of its largest input."""
    most = 0
    for spec in task.inputs:
        if not task.present(spec, env):
            continue
        n = task.storage_elements(spec, env)
        dtype = DTYPES[spec.dtype]
        kind = spec.init["kind"]
        if kind == "custom":
            extra = 8 * n
        elif kind == "randint" and ("scale" in spec.init or "offset" in spec.init):
            extra = 12 * n      # the int64 draw beside its fp32 copy
        elif kind == "randint":
            extra = 0 if dtype == torch.int64 else 8 * n
        elif kind == "bernoulli":
            extra = 4 * n
        else:
            extra = 0 if dtype == torch.float32 else 4 * n
        most = max(most, extra)
    return most


def make_inputs(
    task: Task, env: Mapping[str, Any], seed: int, device: str, reference: ModuleType | None = None
) -> dict[str, torch.Tensor | None]:
    """All inputs of the signature for one config and seed, in signature order (None for an
    optional input the config leaves out)."""
    out: dict[str, torch.Tensor | None] = {}
    custom = [s for s in task.inputs if s.init["kind"] == "custom" and task.present(s, env)]
    if custom:
        maker = getattr(reference, "make_inputs", None)
        if maker is None:
            raise ArenaError(
                "inputs with init: custom need make_inputs in reference.py", path=task.reference_path, key="make_inputs"
            )
        made = maker(dict(env), generator(input_seed(seed, -1), device), device)
        for spec in custom:
            if spec.name not in made:
                raise ArenaError(
                    f"make_inputs did not return {spec.name!r}", path=task.reference_path, key="make_inputs"
                )
    for pos, spec in enumerate(task.inputs):
        if not task.present(spec, env):
            out[spec.name] = None
            continue
        shape = task.shape(spec, env)
        if spec.init["kind"] == "custom":
            t = made[spec.name]
            if tuple(t.shape) != shape or t.dtype != DTYPES[spec.dtype]:
                raise ArenaError(
                    f"make_inputs returned {spec.name!r} as {tuple(t.shape)} {t.dtype}, "
                    f"the signature says {shape} {spec.dtype}",
                    path=task.reference_path,
                    key="make_inputs",
                )
            out[spec.name] = t.to(device).contiguous()
        else:
            out[spec.name] = make_one(
                spec, shape, env, generator(input_seed(seed, pos), device), device, task.strides(spec, env)
            )
    return out


def record_inputs(
    task: Task, env: Mapping[str, Any], seed: int, other: int, device: str, reference: ModuleType | None = None
) -> dict[str, torch.Tensor | None]:
    """The inputs a replayed candidate's call is recorded on (``arena.evaluation.trusted.calls.ReplayedCandidate``):
    the structural inputs of ``seed`` (``structural``), every other one of ``other``."""
    own = make_inputs(task, env, seed, device, reference) if has_structural(task, env) else None
    drawn = make_inputs(task, env, other, device, reference)
    return {s.name: (own[s.name] if own is not None and structural(s) else drawn[s.name]) for s in task.inputs}
