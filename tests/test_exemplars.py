"""The shipped tasks on the CPU backend: every Triton starting point and solution passes its smoke
configs through the harness (Triton under the interpreter), every torch2hip reference (its
starting point) is sound on them, and every Triton kernel
compiles ahead for both vendors' GPUs. That every HIP file translates and compiles for sm_90
(nvcc) and gfx90a (hipcc), specialised kernels too, is tests/test_objcheck.py's
``test_shipped_file`` (one build of each file a session). The GPU run
(scripts/gpu_validate.sh) checks the rest."""

from __future__ import annotations

import pytest

from arena.evaluation.parent import Candidate, evaluate
from arena.records import Status
from arena.taskdef.loader import discover_tasks, load_task

FOLDERS = discover_tasks()


def _ids(folder):
    return f"{folder.parent.name}/{folder.name}"


def _of(*categories):
    return [f for f in FOLDERS if f.parent.name in categories]


# One input seed per smoke config (the harness draws three): these tests check that each shipped kernel
# runs correct under the interpreter, whose cost is the suite's largest; the GPU validation uses three.
SEEDS = [20261123]


def test_there_are_exemplars_in_every_category():
    assert {f.parent.name for f in FOLDERS} == {"hip2hip", "triton2triton", "torch2hip"}


@pytest.mark.parametrize("folder", _of("triton2triton"), ids=_ids)
def test_starting_point_passes_smoke(folder, cpu):
    task = load_task(folder)
    (v,) = evaluate(task, Candidate(task, None, "baseline"), ["smoke"], cpu, seeds=SEEDS)
    assert v.status is Status.PASSED, v.message


@pytest.mark.parametrize("folder", _of("torch2hip"), ids=_ids)
def test_torch2hip_reference_is_sound_on_smoke(folder):
    """A torch2hip starting point is its reference (eager PyTorch) compared with itself: what can fail is the
    reference on the smoke configs, checked here in this process as the trusted process checks it (inputs made
    twice alike from one seed, outputs in their dtype's range, spread past the tolerance, depending on every
    input). An evaluation through the harness costs a trusted process's start (torch imported again, seconds of
    CPU), which this check of the task does not need; the harness's path for such a starting point is
    ``test_reference_and_starting_point_compute_fp32_without_tf32``'s."""
    from arena.check.degeneracy import load_reference, reference_problems

    task = load_task(folder)
    ref = load_reference(task)
    for c in task.configs("smoke"):
        assert reference_problems(task, c, "cpu", ref, seed=SEEDS[0]) == [], c.name


@pytest.mark.parametrize("folder", [f for f in _of("triton2triton") if (f / "solution.py").is_file()], ids=_ids)
def test_triton_solution_passes_smoke(folder, cpu):
    task = load_task(folder)
    (v,) = evaluate(task, Candidate(task, task.kernel_file("solution"), "solution"), ["smoke"], cpu, seeds=SEEDS)
    assert v.status is Status.PASSED, v.message


TRITON_FILES = sorted(p for f in _of("triton2triton") for p in f.glob("*.py")
                      if p.name in ("baseline.py", "solution.py", "specialised.py"))


@pytest.mark.parametrize("path", TRITON_FILES, ids=[f"{p.parent.name}/{p.name}" for p in TRITON_FILES])
def test_every_triton_kernel_compiles_ahead_for_sm90_and_gfx942(path):
    """Every launch a smoke config makes, compiled by Triton's JIT for both vendors' GPUs
    (through the compile-only driver of arena.toolchain.triton_aot, with no GPU here)."""
    from arena.toolchain.triton_aot import TARGETS, compile_launches

    task = load_task(path.parent)
    for target in TARGETS:
        res = compile_launches(task, path, task.configs("smoke"), target)
        assert not res.errors, f"{target}: {res.errors}"
        if not res.kernels and path.name == "specialised.py":
            pytest.skip("the specialised kernel launches nothing on the smoke shapes (it is built for the seen ones)")
        assert res.kernels, "the entry launched no Triton kernel"


def test_reference_and_starting_point_compute_fp32_without_tf32(tmp_path, cpu):
    """The trusted process (the reference) and the process that runs the task's own reference as
    the torch2hip starting point both compute fp32 in fp32: a reference that refuses to run with
    torch's TF32 switches on (cuDNN's is on by default) passes as its own starting point."""
    import shutil

    folder = tmp_path / "torch2hip" / "l2_normalize_rows"
    shutil.copytree(next(f for f in _of("torch2hip") if f.name == "l2_normalize_rows"), folder)
    (folder / "reference.py").write_text(
        "import torch\nimport torch.nn.functional as F\n\n\n"
        "def reference(x, rows, dim, eps):\n"
        "    if torch.backends.cudnn.allow_tf32 or torch.backends.cuda.matmul.allow_tf32:\n"
        "        raise RuntimeError('computed with TF32 allowed')\n"
        "    return F.normalize(x, p=2.0, dim=-1, eps=eps)\n"
    )
    task = load_task(folder)
    (v,) = evaluate(task, Candidate(task, None, "baseline"), ["smoke"], cpu, seeds=SEEDS)
    assert v.status is Status.PASSED, v.message
