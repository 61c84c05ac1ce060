"""The random split: draws obey the task's shape space, favour awkward sizes, respect the
limits, and are reproducible with a seed."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.errors import ArenaError
from arena.taskdef import formula
from arena.taskdef.loader import discover_tasks, load_task
from arena.taskdef.shapes import DrawLimits, draw_configs, limits_for, tensor_bytes

AXPY = Path(__file__).parent / "fixtures" / "tasks" / "triton2triton" / "axpy"
FOLDERS = discover_tasks() + [AXPY]


@pytest.mark.parametrize("folder", FOLDERS, ids=[f"{f.parent.name}/{f.name}" for f in FOLDERS])
def test_draws_obey_the_space_and_are_reproducible(folder):
    task = load_task(folder)
    limits = limits_for("cuda", 80 * 2**30)
    a = draw_configs(task, 6, seed=42, limits=limits)
    b = draw_configs(task, 6, seed=42, limits=limits)
    c = draw_configs(task, 6, seed=43, limits=limits)
    assert [x.params for x in a] == [x.params for x in b]
    assert [x.params for x in a] != [x.params for x in c]
    for cfg in a:
        assert cfg.split == "random"
        for k, spec in task.shape_space.items():
            if k == "constraint":
                assert formula.evaluate(spec, cfg.params)
                continue
            v = cfg.params[k]
            if "choices" in spec:
                assert v in spec["choices"]
            else:
                assert spec["min"] <= v <= spec["max"]
                assert v % spec.get("multiple_of", 1) == 0
        assert tensor_bytes(task, task.env(cfg)) <= limits.max_tensor_bytes


def test_draws_favour_odd_and_non_power_of_two_values():
    task = load_task(AXPY)  # n in [1, 1e8], multiple_of 1
    vals = [c.params["n"] for c in draw_configs(task, 40, seed=7, limits=DrawLimits())]
    odd = sum(v % 2 for v in vals)
    pow2 = sum(v & (v - 1) == 0 for v in vals)
    assert odd >= 20 and pow2 <= 2
    assert min(vals) < 10_000 and max(vals) > 1_000_000   # log-uniform: small and large sizes


def test_impossible_limits_are_a_clear_error():
    task = load_task(AXPY)
    with pytest.raises(ArenaError, match="shape_space"):
        draw_configs(task, 2, seed=1, limits=DrawLimits(max_tensor_bytes=1))
