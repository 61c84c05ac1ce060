"""Triton files compiled ahead of a run's GPU work (arena/toolchain/triton_aot.py,
arena/toolchain/prebuild.py): every launch of a file's entry on the run's configs is compiled
for the GPU's target in warm-up processes, on the CPU (no GPU is needed for that); an
evaluation's own Triton cache is seeded with copies; Triton's JIT then finds every kernel
there (no new compile); a warm-up that hangs is killed and the others finish."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from arena.devices import Device
from arena.evaluation.parent import configs_of_splits
from arena.taskdef.loader import load_task
from arena.toolchain.prebuild import known_triton_jobs, warm_root, warm_triton
from arena.toolchain.triton_aot import device_target, seed_cache, warm_dir
from arena.units import Unit

FIX = Path(__file__).parent / "fixtures" / "tasks"
AXPY = FIX / "triton2triton" / "axpy"
ROOT = Path(__file__).resolve().parents[1]
H200 = Device(kind="cuda", name="NVIDIA H200", vendor="nvidia", arch="sm_90", warp_size=32,
              memory_bytes=140 * 2**30)


def _configs_of(task, splits):
    return configs_of_splits(task, splits, H200, None)


def _entries(d: Path) -> set[str]:
    return {e.name for e in d.iterdir() if e.is_dir()} if d.exists() else set()


def _files(d: Path) -> dict[str, tuple[int, int]]:
    return {str(f.relative_to(d)): (f.stat().st_mtime_ns, f.stat().st_size) for f in d.rglob("*") if f.is_file()}


def test_a_gpu_device_names_the_target_triton_compiles_for():
    assert device_target(H200) == ("cuda", 90, 32)
    mi300 = Device(kind="rocm", name="MI300X", vendor="amd", arch="gfx942", warp_size=64)
    assert device_target(mi300) == ("hip", "gfx942", 64)
    assert device_target(Device(kind="cpu", name="cpu", vendor="cpu", arch="x86_64")) is None


def test_the_run_knows_each_triton_file_once_with_the_union_of_its_splits():
    units = [Unit("baseline", AXPY, 0, ("seen",)), Unit("baseline", AXPY, 1, ("heldout",)),
             Unit("solution", AXPY, 0, ("smoke",))]       # the fixture has no solution file
    jobs = known_triton_jobs(units, _configs_of)
    assert [j.path.name for j in jobs] == ["baseline.py"]
    task = load_task(AXPY)
    # every unit times the baseline: the solution's smoke split too
    assert [c.name for c in jobs[0].configs] == [c.name for s in ("seen", "heldout", "smoke") for c in task.configs(s)]


def test_warmed_kernels_seed_an_evaluation_cache_where_the_jit_compiles_nothing_new(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path / "cache"))
    jobs = known_triton_jobs([Unit("baseline", AXPY, 0, ("seen", "heldout"))], _configs_of)
    cold = warm_triton(jobs, H200, processes=2)
    assert cold["warmed"] == 1 and cold["failed"] == 0 and cold["config_errors"] == 0
    # axpy's n: 1000003 and 7 are not multiples of 16, 1048576... are: two specialisations
    assert cold["kernels"] == 2
    again = warm_triton(jobs, H200, processes=2)
    assert again["cached"] == 1 and again["warmed"] == 0 and again["kernels"] == 0

    evaluation = tmp_path / "pair"
    evaluation.mkdir()
    (evaluation / "KEEP").mkdir()               # what the evaluation's cache holds already stays
    target = device_target(H200)
    copied = seed_cache(evaluation, [AXPY / "baseline.py"], target, warm_root())
    warmed = _entries(warm_dir(AXPY / "baseline.py", target, warm_root()))
    assert copied == len(warmed) == 2 and _entries(evaluation) == warmed | {"KEEP"}
    assert seed_cache(evaluation, [AXPY / "baseline.py"], target, warm_root()) == 0
    # a copy, not a link: writing into the evaluation's cache leaves the warm folder as it was
    some = next(iter(warmed))
    for f in (evaluation / some).iterdir():
        f.write_text("written by a candidate")
    assert all(f.read_text(errors="replace") != "written by a candidate"
               for f in (warm_root() / warm_dir(AXPY / "baseline.py", target, warm_root()).name / some).iterdir())
    shutil.rmtree(evaluation / some)
    seed_cache(evaluation, [AXPY / "baseline.py"], target, warm_root())

    # the copies' group files name the copies: the warm folder is out of an evaluation's reach
    for grp in evaluation.glob("*/__grp__*.json"):
        assert all(Path(p).parent == grp.parent for p in json.loads(grp.read_text())["child_paths"].values())
    # Triton's JIT in a fresh process, on the seeded cache alone (the warm folders gone), for
    # the same configs: every launch is found in the cache, no file is written
    shutil.rmtree(warm_root())
    before = _files(evaluation)
    code = ("import sys; from arena.taskdef.loader import load_task; from arena.toolchain.triton_aot import "
            "compile_launches; t = load_task(sys.argv[1]); "
            "r = compile_launches(t, t.kernel_file('baseline'), t.configs('seen') + t.configs('heldout'), "
            "('cuda', 90, 32)); assert not r.errors, r.errors; print(len(r.kernels))")
    out = subprocess.run([sys.executable, "-c", code, str(AXPY)], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "TRITON_CACHE_DIR": str(evaluation), "PYTHONPATH": str(ROOT)},
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "2"
    assert _files(evaluation) == before


def test_only_an_evaluation_of_the_tasks_own_files_is_seeded(tmp_path, monkeypatch):
    """The trusted process's cache (the baseline's kernels) is always seeded: the candidate's
    process cannot reach it. The candidate's own cache is seeded only for one of the task's
    own files: it is shared by every evaluation of the same file."""
    from arena.evaluation.parent import _caches
    from arena.evaluation.protocol import JobFrame

    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path / "cache"))
    task = load_task(AXPY)
    assert warm_triton(known_triton_jobs([Unit("baseline", AXPY, 0, ("smoke",))], _configs_of), H200,
                       processes=1)["warmed"] == 1
    own = tmp_path / "workspace" / "baseline.py"
    own.parent.mkdir()
    shutil.copy(AXPY / "baseline.py", own)                    # the baseline agent's copy
    agents = tmp_path / "agent.py"
    agents.write_text(own.read_text().replace("BLOCK = 1024", "BLOCK = 2048"))
    base = {"language": "triton", "path": str(AXPY / "baseline.py")}
    for path, expected in ((own, 1), (agents, 0)):
        job = JobFrame(task_dir=str(task.path), candidate={"language": "triton", "path": str(path)}, baseline=base,
                       device={}, splits=[], timeouts={})
        trusted, candidate = _caches(job, H200, task)
        assert len(_entries(trusted)) == 1, path
        assert len(_entries(candidate)) == expected, path
    assert trusted != candidate


def test_a_hung_warm_up_is_killed_and_the_other_files_are_warmed(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path / "cache"))
    hung = tmp_path / "tasks" / "triton2triton" / "hung"
    shutil.copytree(AXPY, hung, ignore=shutil.ignore_patterns("__pycache__"))
    text = (hung / "task.yaml").read_text()
    (hung / "task.yaml").write_text(text.replace("triton2triton/axpy", "triton2triton/hung"))
    src = (hung / "baseline.py").read_text()
    (hung / "baseline.py").write_text(src.replace("    BLOCK = 1024\n", "    import time\n    time.sleep(3600)\n"))
    jobs = known_triton_jobs(
        [Unit("baseline", hung, 0, ("smoke",)), Unit("baseline", AXPY, 0, ("smoke",))], _configs_of
    )
    assert len(jobs) == 2
    stats = warm_triton(jobs, H200, processes=2, job_s=20)
    assert stats["failed"] == 1 and stats["warmed"] == 1
    assert not (warm_dir(hung / "baseline.py", device_target(H200), warm_root()) / "warmed.json").exists()
    manifest = json.loads(
        (warm_dir(AXPY / "baseline.py", device_target(H200), warm_root()) / "warmed.json").read_text()
    )
    assert len(manifest["configs"]) == len(load_task(AXPY).configs("smoke"))


def test_the_cpu_backend_warms_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path / "cache"))
    cpu = Device(kind="cpu", name="cpu", vendor="cpu", arch="x86_64")
    jobs = known_triton_jobs([Unit("baseline", AXPY, 0, ("smoke",))], _configs_of)
    assert warm_triton(jobs, cpu)["warmed"] == 0
    assert not warm_root().exists()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
