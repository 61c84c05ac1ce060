"""Authoring checks on the reference: outputs that are not degenerate and depend on every input.

A task whose outputs are near-constant, or far below the tolerance, lets a constant or a
partial kernel pass (METHODOLOGY.md); such tasks are fixed when written, not scored. What is
checked is what is compared (``Task.compared``): the outputs and the values the inputs
updated in place (inout) have after the reference; an inout input the reference leaves as
it was is a problem too (it must update its copy in place).
"""

from __future__ import annotations

import math
import time
from types import ModuleType
from typing import Callable

import torch

from arena.check.inputs import DTYPES, generator, input_seed, make_inputs, make_one, run_reference, storage
from arena.errors import ArenaException
from arena.evaluation.sides import import_reference
from arena.taskdef.loader import Config, InputSpec, Task

MIN_STD = 1e-2
# a task whose atol is scaled down to its outputs' scale (a softmax over a vocabulary: outputs near 1e-5) asks
# less of their spread: this many times its atol (1e-2 at the fp32 default, 1e-4)
STD_OVER_ATOL = 100


def load_reference(task: Task) -> ModuleType:
    return import_reference(task.reference_path)


def _run(ref: ModuleType, task: Task, ins: dict[str, torch.Tensor | None], scalars: list) -> list:
    return run_reference(ref.reference, task, ins, scalars)


def least_spread(atol: float) -> float:
    """The standard deviation an output of more than one element must exceed at ``atol``: 1e-2 (``MIN_STD``), or
    ``STD_OVER_ATOL`` times an atol scaled below the default."""
    return min(MIN_STD, STD_OVER_ATOL * atol)


def spread_problems(name: str, ref: torch.Tensor, tol: dict) -> list[str]:
    """What makes an output of more than one element degenerate under its tolerance: a spread too small
    for it (std at most 1e-2, or ``STD_OVER_ATOL`` times an atol scaled below the default); a constant
    (the output's mean, or zero) that the comparison would pass, elementwise and normwise; more than half
    of its nonzero elements below atol in magnitude (exact zeros are structure: the positions a strided
    transposed convolution never writes, a ReLU's negative half)."""
    r = ref.detach().double()   # outputs of a GPU-sized config: a few temporaries the size of r at most
    finite = torch.isfinite(r)
    if not bool(finite.all()):
        r = r[finite]
    del finite
    if not r.numel():
        return [f"{name} has no finite value"]
    problems = []
    floor = least_spread(tol["atol"])
    std = float(r.std()) if r.numel() > 1 else 0.0
    if std <= floor:
        problems.append(f"{name}: std {std:.3g} <= {floor:g}")
    size = r.abs()
    nonzero = int(torch.count_nonzero(size))
    below = int(torch.count_nonzero(size < tol["atol"])) - (r.numel() - nonzero)
    if nonzero and below / nonzero > 0.5:
        problems.append(f"{name}: {below / nonzero:.0%} of its nonzero |ref| below atol {tol['atol']:g}")
    allowed = size.mul_(tol["rtol"]).add_(tol["atol"])
    bound = tol["norm"] * float(torch.linalg.vector_norm(r))
    for what, c in (("its mean", float(r.mean())), ("zero", 0.0)):
        d = r.sub(c).abs_()
        if bool((d <= allowed).all()) and float(torch.linalg.vector_norm(d)) <= bound:
            problems.append(f"{name}: a constant ({what}, {c:.3g}) passes the comparison (atol {tol['atol']:g}, "
                            f"rtol {tol['rtol']:g}, norm {tol['norm']:g})")
            break
    return problems


def range_problems(name: str, ref: torch.Tensor, dtype: torch.dtype) -> list[str]:
    """The reference (computed on upcast inputs) reaches values its output's dtype cannot hold: a kernel
    that writes that dtype overflows there (an fp16 product of long sums past 65504), a failure of the task,
    not of the kernel."""
    if dtype == torch.bool or ref.numel() == 0:
        return []
    r = ref.detach()
    if r.is_floating_point():
        if r.element_size() < 2:
            r = r.float()   # torch has no isfinite, min or max of its fp8 types
        r = r[torch.isfinite(r)]
        if not r.numel():
            return []
    lo, hi = float(r.min()), float(r.max())
    info = torch.finfo(dtype) if dtype.is_floating_point else torch.iinfo(dtype)
    if lo >= info.min and hi <= info.max:
        return []
    top = hi if hi > info.max else lo
    return [f"{name}: the reference's values reach {top:.6g}, past what {str(dtype).removeprefix('torch.')} holds "
            f"({info.min:.6g} to {info.max:.6g}): a kernel that writes it overflows; draw smaller inputs or declare "
            f"the output wider"]


REDRAW = 7919      # the seed offset of the inputs drawn again
REDRAWS = 4        # the draws of an input the outputs' dependence on it is looked for in
GRADIENT_FROM = 3  # the inputs to show from which one backward pass is tried first (moved_by_gradient)
GRADIENT_MIN_S = 1.0  # the least time the backward pass is given, however fast the reference's forward (seconds)


# An output of a few values (a loss, the norm of one row) has no spread across its elements to read: it must move
# past its tolerance t when the inputs are drawn again, or a constant passes. Whether one redraw moves it so is itself a
# draw: where its values' spread across draws is r times t, one redraw leaves it within t with probability
# P(|z| <= 1 / (r sqrt 2)), 52% at r = 1, 19% at 3, and a constant at its mean passes P(|z| <= 1 / r) of the draws.
# On an H200, a mean squared error over 33 M elements spread 1.2-1.7 t across 8 draws, and one redraw moved it by 2.8 t
# (passed) on one config and its CPU draws by 0.1 t (refused) on another; rmsnorm's rsigma of one row of 67 M columns
# spread 1 t and passed one CPU draw, then failed the H200's. So such an output is read over several draws, until the
# estimate of r is plainly past the margin (twice it) or plainly short of it (a third of it), and refused where r is
# below FEW_VALUES_MARGIN. Four draws estimate a spread to within a factor of two or so, hence the bounds on both sides.
FEW_VALUES = 16              # an output of at most this many values is read across draws
FEW_VALUES_DRAWS = (4, 8)    # the draws of the inputs it is read over, at least and at most (REDRAW apart)
FEW_VALUES_MARGIN = 3        # its values' spread across draws, in times their tolerance, at least


def has_few_values(task: Task, config: Config) -> bool:
    """Whether a compared floating-point output of ``config`` has at most ``FEW_VALUES`` values (by its shape, before
    any run: the configs ``few_values_problems`` reads over several draws)."""
    env = task.env(config)
    return any(task.tolerance_of(spec) is not None and task.present(spec, env)
               and 0 < math.prod(task.shape(spec, env)) <= FEW_VALUES for spec in task.compared)


def draws_spread(draws: list[torch.Tensor], tol: dict) -> tuple[float, float] | None:
    """(spread, times its tolerance) of an output read over ``draws`` (its values, one tensor a draw): the median over
    its values of their standard deviation across the draws, and of that over atol + rtol * |value|; None where it
    has fewer than two draws or a value that is not finite."""
    if len(draws) < 2:
        return None
    v = torch.stack([d.detach().double().reshape(-1) for d in draws])
    if not bool(torch.isfinite(v).all()):
        return None
    spread = v.std(dim=0)
    allowed = v.abs().mean(dim=0) * tol["rtol"] + tol["atol"]
    return float(spread.median()), float((spread / allowed).median())


def few_values_problems(task: Task, outs: list, again: Callable[[int], list]) -> list[str]:
    """What makes the compared floating-point outputs of at most ``FEW_VALUES`` values among ``outs`` (the reference's
    outputs on one draw of the inputs) degenerate: their spread across draws (``again(k)``: the outputs on the k-th
    draw after it, k = 1, 2, ...; ``FEW_VALUES_DRAWS``) below ``FEW_VALUES_MARGIN`` times their tolerance (a constant
    passes), or one value below atol."""
    few = [(i, spec, tol) for i, spec in enumerate(task.compared)
           if (tol := task.tolerance_of(spec)) is not None and isinstance(outs[i], torch.Tensor)
           and 0 < outs[i].numel() <= FEW_VALUES]
    if not few:
        return []
    got = {i: [outs[i]] for i, _, _ in few}
    least, most = FEW_VALUES_DRAWS
    for k in range(1, most):
        more = again(k)
        for i, _, _ in few:
            if isinstance(more[i], torch.Tensor):
                got[i].append(more[i])
        del more
        read = [draws_spread(got[i], tol) for i, _, tol in few]
        if k + 1 >= least and all(r is None or not FEW_VALUES_MARGIN / 3 <= r[1] < 2 * FEW_VALUES_MARGIN
                                  for r in read):
            break
    problems = []
    for (i, spec, tol), r in zip(few, read):
        n = outs[i].numel()
        if r is not None and r[1] < FEW_VALUES_MARGIN:
            problems.append(f"{spec.name} is {'one value' if n == 1 else f'{n} values'} that {len(got[i])} draws of "
                            f"the inputs move by {r[0]:.3g}, {r[1]:.2g} times its tolerance (less than "
                            f"{FEW_VALUES_MARGIN}): a constant would pass")
        if n == 1 and abs(float(outs[i].detach().double().reshape(-1)[0])) < tol["atol"]:
            problems.append(f"{spec.name} is one value below atol {tol['atol']:g}")
    return problems


def reference_problems(task: Task, config: Config, device: str, ref: ModuleType, seed: int = 1234) -> list[str]:
    """What makes this config degenerate; empty when it is fine."""
    env = task.env(config)
    scalars = [task.scalar_value(s, env) for s in task.scalars]
    ins = make_inputs(task, env, seed, device, ref)
    problems = []
    again = make_inputs(task, env, seed, device, ref)
    for name, t in ins.items():   # the harness re-makes inputs from the seed to run the reference after the call
        if t is None:
            continue
        a, b = storage(t).view(torch.uint8), storage(again[name]).view(torch.uint8)
        if t.shape != again[name].shape or not torch.equal(a, b):
            problems.append(f"make_inputs is not deterministic: input {name} differs between two calls with the "
                            f"same seed")
    started = time.perf_counter()
    outs = _run(ref, task, ins, scalars)
    _synchronize(device)
    forward_s = time.perf_counter() - started
    for spec, o in zip(task.compared, outs):
        if o is None:
            continue
        if getattr(spec, "inout", False) and torch.equal(o, ins[spec.name].to(o.dtype)):
            problems.append(f"the reference leaves inout input {spec.name} as it was: it must update it in place")
        tol = task.tolerance_of(spec)
        problems += range_problems(spec.name, o, DTYPES[spec.dtype])
        if o.numel() == 0:
            problems.append(f"{spec.name} is empty")
            continue
        if tol is None:
            if torch.unique(o).numel() < 2:
                problems.append(f"{spec.name} is constant")
            continue
        if o.numel() > 1:
            problems += spread_problems(spec.name, o, tol)
    problems += few_values_problems(task, outs, lambda k: _run(ref, task, make_inputs(task, env, seed + k * REDRAW,
                                                                                        device, ref), scalars))
    drawn: dict[int, dict[str, torch.Tensor | None]] = {}     # every input drawn again at once, by draw

    def draw_again(pos: int, spec: InputSpec, k: int) -> torch.Tensor:
        if spec.init["kind"] == "custom":
            if k not in drawn:
                drawn[k] = make_inputs(task, env, seed + k * REDRAW, device, ref)
            return drawn[k][spec.name]
        return make_one(spec, task.shape(spec, env), env, generator(input_seed(seed + k * REDRAW, pos), device),
                        device, task.strides(spec, env))

    firsts = {spec.name: draw_again(pos, spec, 1) for pos, spec in enumerate(task.inputs)
              if ins[spec.name] is not None and ins[spec.name].is_floating_point() and not spec.inout}
    # the backward pass given as long as the draws it would save: a run of the reference an input
    moved = moved_by_gradient(ref, task, ins, scalars, firsts,
                              budget_s=max(GRADIENT_MIN_S, len(firsts) * forward_s))
    for pos, spec in enumerate(task.inputs):
        if ins[spec.name] is None or spec.name in moved:
            continue
        # drawn again up to REDRAWS times: an input the outputs depend on in a few places only (a position that
        # matters where it is below a length drawn beside it) can leave them alike for one draw
        tried = depends = False
        for k in range(1, REDRAWS + 1):
            other = firsts[spec.name] if k == 1 and spec.name in firsts else draw_again(pos, spec, k)
            if other.numel() == 0 or torch.equal(other, ins[spec.name]):
                continue
            tried = True
            changed = dict(ins)
            changed[spec.name] = other
            outs2 = _run(ref, task, changed, scalars)
            if not all(a is None or torch.equal(a, b) for a, b in zip(outs, outs2)):
                depends = True
                break
        if tried and not depends:
            problems.append(f"the outputs do not depend on input {spec.name}")
    return problems


def _synchronize(device: str) -> None:
    if str(device).startswith("cuda") and torch.cuda.is_available():
        torch.cuda.synchronize()


class _PastBudget(ArenaException):
    """The backward pass ran past the time it was given."""


def _bounded(roots: list, deadline: float) -> None:
    """A pre-hook on every node of the graph behind ``roots`` that stops the backward pass once ``deadline``
    (``time.perf_counter``) has passed: the engine calls it before each node runs, and what it raises ends the
    pass."""
    def hook(_grads):
        if time.perf_counter() > deadline:
            raise _PastBudget
    nodes: dict[int, object] = {}        # by id, each kept alive while the walk goes on
    stack = [r for r in roots if r is not None]
    while stack:
        node = stack.pop()
        if id(node) in nodes:
            continue
        nodes[id(node)] = node
        try:
            node.register_prehook(hook)
        except (RuntimeError, AttributeError):     # a node that takes no hook runs unwatched; the rest still stop it
            pass
        stack += [n for n, _ in node.next_functions if n is not None]


def moved_by_gradient(ref: ModuleType, task: Task, ins: dict[str, torch.Tensor | None], scalars: list,
                      redrawn: dict[str, torch.Tensor], budget_s: float | None = None) -> set[str]:
    """The inputs among ``redrawn``'s (floating-point inputs the reference does not update) that one backward pass
    shows the outputs move with; the others are drawn again and the reference run once a draw, as before.

    ``s`` is the sum of the floating-point outputs weighted by one normal draw ``w``. Drawing an input again
    moves ``s``, to first order, by its gradient times the draw's change; where that is more than the outputs'
    rounding can move ``s`` (each output by its dtype's epsilon of itself: sum of ``|w| eps |out|``), some output
    changes, and the outputs depend on the input. A network's hundreds of weights are so shown by one forward and
    one backward pass instead of a forward pass each (ResNet-101: 314 inputs). A reference that cannot be
    differentiated (it writes into its inputs, leaves the graph, fails) shows nothing here. A backward pass costs
    about two forward passes: with fewer than ``GRADIENT_FROM`` inputs to show, the draws alone are cheaper.

    Not every backward pass is so cheap, and then the draws are: a reference that writes its output a slice at a
    time, in a Python loop over chunks, has a backward whose node for each slice copies the gradient of the whole
    output, so it grows as the square of the chunks or faster (FLA's ``chunk_fwd_o`` test on one CPU thread, at 512
    chunks of a 4 MB output: 0.07 s forward, 1.3 s backward; at 2,048 chunks of 16 MB: 0.26 s and 87 s). The pass
    is given ``budget_s`` (the forward with the graph included), as long as the draws it saves would take; past it,
    it is let go and every input is left to the draws."""
    if len(redrawn) < GRADIENT_FROM:
        return set()
    leaves = {n: t.detach().clone().requires_grad_(True) for n, t in ins.items() if n in redrawn and t is not None}
    deadline = time.perf_counter() + budget_s if budget_s is not None else None
    try:
        with torch.enable_grad():
            outs = _run(ref, task, {**ins, **leaves}, scalars)
            g = torch.Generator(device="cpu").manual_seed(REDRAW)
            total, rounding = None, 0.0
            for o in outs:
                if o is None or not o.is_floating_point() or not o.requires_grad or o.numel() == 0:
                    continue
                w = torch.randn(o.shape, generator=g, dtype=torch.float64).to(o.device)
                term = (o.double() * w).sum()
                total = term if total is None else total + term
                rounding += float((w.abs() * o.detach().double().abs()).sum()) * torch.finfo(o.dtype).eps
            if total is None:
                return set()
            if deadline is not None:
                if time.perf_counter() > deadline:
                    return set()
                _bounded([total.grad_fn], deadline)
            grads = torch.autograd.grad(total, list(leaves.values()), allow_unused=True)
    except Exception:   # noqa: BLE001 - any failure to differentiate (or _PastBudget) leaves the inputs to the draws
        return set()
    moved = set()
    for (name, leaf), grad in zip(leaves.items(), grads):
        if grad is None:
            continue
        change = float((grad.double() * (redrawn[name].double() - leaf.detach().double())).sum())
        if math.isfinite(change) and abs(change) > rounding:
            moved.add(name)
    return moved
