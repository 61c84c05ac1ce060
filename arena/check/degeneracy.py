"""Authoring checks on the reference: outputs that are not degenerate and depend on every input.

A task whose outputs are near-constant, or far below the tolerance, lets a constant or a
partial kernel pass (METHODOLOGY.md); such tasks are fixed when written, not scored. What is
checked is what is compared (``Task.compared``): the outputs and the values the inputs
updated in place (inout) have after the reference; an inout input the reference leaves as
it was is a problem too (it must update its copy in place).
"""

from __future__ import annotations

import random
from types import ModuleType

import torch

from arena.check.inputs import generator, input_seed, make_inputs, make_one, run_reference, storage
from arena.evaluation.sides import import_file
from arena.taskdef.loader import Config, Task

MIN_STD = 1e-2


def load_reference(task: Task) -> ModuleType:
    return import_file(task.reference_path, f"arena_reference_{random.getrandbits(32)}")


def _run(ref: ModuleType, task: Task, ins: dict[str, torch.Tensor | None], scalars: list) -> list:
    return run_reference(ref.reference, task, ins, scalars)


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
    outs = _run(ref, task, ins, scalars)
    for spec, o in zip(task.compared, outs):
        if o is None:
            continue
        if getattr(spec, "inout", False) and torch.equal(o, ins[spec.name].to(o.dtype)):
            problems.append(f"the reference leaves inout input {spec.name} as it was: it must update it in place")
        tol = task.tolerance_for(spec.dtype)
        if o.numel() == 0:
            problems.append(f"{spec.name} is empty")
            continue
        if tol is None:
            if torch.unique(o).numel() < 2:
                problems.append(f"{spec.name} is constant")
            continue
        of = o.double()
        if o.numel() == 1:
            # one value has no spread: it must move beyond the tolerance when every input is drawn again, or
            # a constant passes (a mean loss over a million uniform draws is 1/6 give or take 1e-4)
            redrawn = _run(ref, task, make_inputs(task, env, seed + 7919, device, ref), scalars)
            o2 = redrawn[task.compared.index(spec)].double()
            if bool(((of - o2).abs() <= tol["atol"] + tol["rtol"] * o2.abs()).all()):
                problems.append(f"{spec.name} is one value ({float(of.flatten()[0]):.6g}) that drawing every input "
                                f"again moves by {float((of - o2).abs().flatten()[0]):.3g}, within the tolerance: a "
                                "constant would pass")
        else:
            std = float(of.std())
            if std <= MIN_STD:
                problems.append(f"{spec.name}: std {std:.3g} <= {MIN_STD}")
        below = float((of.abs() < tol["atol"]).double().mean())
        if below > 0.5:
            problems.append(f"{spec.name}: {below:.0%} of |ref| below atol {tol['atol']:g}")
    for pos, spec in enumerate(task.inputs):
        if ins[spec.name] is None:
            continue
        if spec.init["kind"] == "custom":
            other = make_inputs(task, env, seed + 7919, device, ref)[spec.name]
        else:
            shape = task.shape(spec, env)
            other = make_one(spec, shape, env, generator(input_seed(seed + 7919, pos), device), device,
                             task.strides(spec, env))
        if other.numel() == 0 or torch.equal(other, ins[spec.name]):
            continue
        changed = dict(ins)
        changed[spec.name] = other
        outs2 = _run(ref, task, changed, scalars)
        if all(a is None or torch.equal(a, b) for a, b in zip(outs, outs2)):
            problems.append(f"the outputs do not depend on input {spec.name}")
    return problems
