"""The shipped tasks on the CPU backend: every starting point and solution passes its smoke
configs (Triton under the interpreter, torch2hip's eager reference), every HIP file
translates and compiles for sm_90 (nvcc) and gfx90a (hipcc), and specialised kernels
build too. The GPU run (scripts/gpu_validate.sh) checks the rest."""

from __future__ import annotations

import os
import shutil

import pytest

from arena.build.hip import build_hip
from arena.devices import detect
from arena.evaluate import Candidate, evaluate
from arena.records import Status
from arena.spec.loader import discover_tasks, load_task

TASKS = [load_task(p) for p in discover_tasks()]
REQUIRE = os.environ.get("ARENA_REQUIRE_TOOLCHAINS") == "1"


def _ids(tasks):
    return [t.id for t in tasks]


@pytest.fixture(scope="module")
def cpu():
    return detect("cpu")


def test_there_are_exemplars_in_every_category():
    cats = {t.category for t in TASKS}
    assert cats == {"hip2hip", "triton2triton", "torch2hip"}


@pytest.mark.parametrize("task", [t for t in TASKS if t.category != "hip2hip"], ids=_ids)
def test_starting_point_passes_smoke(task, cpu):
    (v,) = evaluate(task, Candidate(task, None, "baseline"), ["smoke"], cpu)
    assert v.status is Status.PASSED, v.message


@pytest.mark.parametrize("task", [t for t in TASKS if t.category == "triton2triton" and t.kernel_file("solution")],
                         ids=_ids)
def test_triton_solution_passes_smoke(task, cpu):
    (v,) = evaluate(task, Candidate(task, task.kernel_file("solution"), "solution"), ["smoke"], cpu)
    assert v.status is Status.PASSED, v.message


HIP_FILES = [(t, t.kernel_file(r)) for t in TASKS for r in ("baseline", "solution", "specialised")
             if t.kernel_file(r) is not None and t.kernel_file(r).suffix == ".hip"]


@pytest.mark.parametrize("target, arch", [("cuda", "sm_90"), ("rocm", "gfx90a")])
@pytest.mark.parametrize("task, path", HIP_FILES, ids=[f"{t.id}/{p.name}" for t, p in HIP_FILES])
def test_every_hip_file_compiles_for_both_vendors(task, path, target, arch):
    tool = "nvcc" if target == "cuda" else "hipcc"
    if shutil.which(tool) is None:
        if REQUIRE:
            pytest.fail(f"{tool} is required (ARENA_REQUIRE_TOOLCHAINS=1) but not on PATH")
        pytest.skip(f"{tool} not installed")
    res = build_hip(path, target=target, arch=arch)
    assert res.ok, res.log[-3000:]
