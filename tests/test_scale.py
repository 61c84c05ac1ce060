"""Scale (arena/runner.py, arena/ray_executor.py, arena/toolchain/prebuild.py): a run killed with
SIGKILL mid-way and resumed loses and duplicates nothing; several GPU workers claim units
from one queue; the Ray executor on a local Ray instance; HIP files built ahead in parallel
into the shared cache; a worker sees only its own GPU."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from stuck import wait_or_dump  # tests/ is on the path

from arena import records
from arena.devices import Device, detect
from arena.runner import run
from arena.units import RunPlan

FIX = Path(__file__).parent / "fixtures" / "tasks"
AXPY = FIX / "triton2triton" / "axpy"
SCALE = FIX / "hip2hip" / "scale"
ROOT = Path(__file__).resolve().parents[1]


def _keys(path: Path) -> list[tuple]:
    return [(v.agent, v.task_id, v.repeat, v.split) for v in records.read(path)]


def test_kill_dash_nine_then_resume_loses_and_duplicates_nothing(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "arena", "--tasks-dir", str(FIX), "run", "--agent", "baseline",
           "--tasks", "triton2triton/axpy", "--split", "smoke", "--repeats", "6", "--device", "cpu",
           "--out", str(out), "--quiet"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    rec = out / "records.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(_keys(rec)) < 1:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    first = _keys(rec)
    assert 1 <= len(first) < 6, "the kill should land mid-run"
    with open(rec, "ab") as f:               # a line torn by the kill
        f.write(b'{"task_id": "triton2triton/axpy", "split": "sm')
    rc = subprocess.run(cmd + ["--resume"], cwd=ROOT, capture_output=True, text=True)
    assert rc.returncode == 0, rc.stderr[-2000:]
    keys = _keys(rec)
    assert keys[:len(first)] == first                  # nothing recorded before was lost or rewritten
    assert len(keys) == len(set(keys)) == 6            # 6 repeats x smoke, once each
    assert all(v.status.value == "PASSED" for v in records.read(rec))


def test_gpu_workers_claim_units_from_one_queue(tmp_path, monkeypatch):
    import arena.runner as runner

    cpu = detect("cpu")
    seen_by: dict[int, list[str]] = collections.defaultdict(list)
    real = runner.run_unit

    def tracking(unit, plan, device, *a, **k):
        seen_by[device.index].append(f"{unit.agent}/{unit.repeat}")
        return real(unit, plan, device, *a, **k)

    # stand-in GPUs: the cpu device under two indices (the queue and threads are what is tested)
    monkeypatch.setattr(runner, "_on_gpu", lambda device, i: Device(**{**cpu.to_dict(), "index": i}))
    monkeypatch.setattr(runner, "run_unit", tracking)
    plan = RunPlan(agents=("baseline",), tasks=(AXPY,), splits=("smoke",), repeats=4)
    out = tmp_path / "run"
    run(plan, cpu, out, gpus=[0, 1])
    keys = _keys(out / "records.jsonl")
    assert sorted(keys) == sorted(("baseline", "triton2triton/axpy", r, "smoke") for r in range(4))
    claimed = [u for us in seen_by.values() for u in us]
    assert sorted(claimed) == sorted(f"baseline/{r}" for r in range(4))   # each unit exactly once


def test_a_worker_sees_only_its_gpu(tmp_path):
    from arena.evaluation.processes import _worker_env

    gpu = Device(kind="cuda", name="test", vendor="nvidia", arch="sm_90", index=3)
    env = _worker_env(gpu, tmp_path)
    assert env["CUDA_VISIBLE_DEVICES"] == "3" and env["HIP_VISIBLE_DEVICES"] == "3"
    assert Device(kind="cuda", name="x", vendor="nvidia", arch="sm_90").visible_devices == {}


def test_gpus_on_the_cpu_backend_is_a_clear_error(tmp_path, capsys):
    from arena.cli import main

    rc = main(["--tasks-dir", str(FIX), "run", "--agent", "baseline", "--tasks", "triton2triton/axpy",
               "--device", "cpu", "--gpus", "0,1", "--out", str(tmp_path / "r")])
    assert rc != 0 and "--gpus" in capsys.readouterr().err


def test_ray_executor_on_a_local_instance(tmp_path, environment_restored):
    pytest.importorskip("ray")
    plan = RunPlan(agents=("baseline",), tasks=(AXPY,), splits=("smoke",), repeats=3)
    out = tmp_path / "run"
    written = run(plan, detect("cpu"), out, executor="ray")
    keys = _keys(out / "records.jsonl")
    assert len(written) == len(keys) == len(set(keys)) == 3
    assert all(v.status.value == "PASSED" and v.run_id == "run" for v in records.read(out / "records.jsonl"))
    for r in range(3):
        assert (out / "artifacts" / "baseline" / "triton2triton" / "axpy" / str(r) / "worker.log").is_file()


def test_ray_probes_program_agents_and_stops_one_that_keeps_failing(tmp_path, monkeypatch, environment_restored):
    """On Ray, as locally: a program agent that cannot run stops the run before anything is
    recorded (probed on a node), and one whose attempts fail the same way three times in a row
    has its other attempts cancelled (``--resume`` makes them)."""
    pytest.importorskip("ray")
    from arena.errors import ArenaError

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "dies").write_text("#!/bin/sh\necho 'Error: no configuration found' >&2\nexit 1\n")
    (bin_dir / "dies").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    dies = tmp_path / "dies.yaml"
    dies.write_text("name: dies\ncommand: [dies]\nbudget_s: 60\n")
    absent = tmp_path / "absent.yaml"
    absent.write_text("name: absent\ncommand: [no-such-program-here]\nbudget_s: 60\ninstall: get it\n")
    with pytest.raises(ArenaError, match="no-such-program-here"):
        run(RunPlan(agents=(str(absent),), tasks=(AXPY,), splits=("smoke",)), detect("cpu"), tmp_path / "r1",
            executor="ray", probe=True)
    assert not (tmp_path / "r1" / "records.jsonl").exists()
    said: list[str] = []
    run(RunPlan(agents=(str(dies),), tasks=(AXPY,), splits=("smoke",), repeats=6), detect("cpu"), tmp_path / "r2",
        executor="ray", probe=True, on_stop=said.append)
    got = list(records.read(tmp_path / "r2" / "records.jsonl"))
    assert len(got) == 3 and all(v.agent_run["exit_reason"] == "not_started" for v in got)
    assert len(said) == 1 and "agent dies stopped: 3 attempts in a row ended 'not_started'" in said[0]


def test_hip_files_are_built_ahead_into_the_shared_cache(tmp_path, monkeypatch):
    from arena.toolchain.hip import toolchain_available
    from arena.toolchain.prebuild import known_hip_files, prebuild
    from arena.units import Unit

    if toolchain_available("cuda") and toolchain_available("rocm"):
        pytest.skip("no HIP compiler here")
    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path / "cache"))
    units = [Unit("baseline", SCALE, 0, ("smoke",)), Unit("solution", AXPY, 0, ("smoke",))]
    files = known_hip_files(units)
    assert files == [SCALE / "baseline.hip"]
    cold = prebuild(files, detect("cpu"), jobs=2)
    assert cold["built"] >= 1 and cold["failed"] == 0 and cold["cached"] == 0
    warm = prebuild(files, detect("cpu"), jobs=2)
    assert warm["cached"] == cold["built"] and warm["built"] == 0


def test_ctrl_c_stops_a_run_promptly_and_resume_finishes_it(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "arena", "--tasks-dir", str(FIX), "run", "--agent", "baseline",
           "--tasks", "triton2triton/axpy", "--split", "smoke", "--repeats", "8", "--device", "cpu",
           "--workers-per-gpu", "2", "--out", str(out), "--quiet"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rec = out / "records.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(_keys(rec)) < 1:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=300)
    first = _keys(rec)
    assert 1 <= len(first) < 8
    # the evaluations killed in flight are not recorded (as crashes): resume runs them again
    assert all(v.status.value == "PASSED" for v in records.read(rec))
    rc = subprocess.run(cmd + ["--resume"], cwd=ROOT, capture_output=True, text=True)
    assert rc.returncode == 0, rc.stderr[-2000:]
    keys = _keys(rec)
    assert keys[:len(first)] == first and len(keys) == len(set(keys)) == 8
    assert all(v.status.value == "PASSED" for v in records.read(rec))


def _processes_under(folder: Path) -> list[int]:
    """Live processes whose working directory is inside ``folder`` (a worker's scratch folder)."""
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if Path(os.readlink(p / "cwd")).is_relative_to(folder):
                    found.append(int(p.name))
            except (OSError, ValueError):
                pass
    return found


def test_ctrl_c_does_not_wait_for_the_evaluation_in_flight(tmp_path):
    """Ctrl-C while an evaluation runs a kernel that sleeps for an hour (under a 600 s stage
    limit): the run stops it rather than waiting, records nothing, and leaves no process (the
    confined ones' namespace init keeps the worker's folder as its working directory). No
    duration is assumed: the kernel itself says when it runs (a file in its Triton cache), and
    the test's limits only end a hang."""
    import shutil

    tasks = tmp_path / "tasks"
    task = tasks / "triton2triton" / "axpy"
    shutil.copytree(AXPY, task, ignore=shutil.ignore_patterns("__pycache__"))
    (task / "task.yaml").write_text((task / "task.yaml").read_text() + "timeouts: {correctness_s: 600}\n")
    # its Triton cache: the one folder of the run's it may write (its own temporary folder is private)
    (task / "baseline.py").write_text(
        "import os\nimport time\n\n\ndef axpy(x, y, out, n, alpha):\n"
        "    open(os.path.join(os.environ['TRITON_CACHE_DIR'], 'in-flight'), 'w').close()\n"
        "    time.sleep(3600)\n"
    )
    cache, out = tmp_path / "cache", tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "arena",
        "--tasks-dir",
        str(tasks),
        "run",
        "--agent",
        "baseline",
        "--tasks",
        "triton2triton/axpy",
        "--split",
        "smoke",
        "--device",
        "cpu",
        "--out",
        str(out),
        "--quiet",
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env={**os.environ, "ARENA_CACHE_DIR": str(cache)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 300
        while not list(cache.glob("triton/**/in-flight")):
            assert proc.poll() is None and time.monotonic() < deadline, "the kernel never ran"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        rc = wait_or_dump(proc, 300)  # waiting for the evaluation would take 600 s
        assert rc == 130, proc.stderr.read().decode(errors="replace")[-2000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert list(records.read(out / "records.jsonl")) == []
    deadline = time.monotonic() + 60
    while _processes_under(cache / "workers"):
        assert time.monotonic() < deadline, f"processes of the run left: {_processes_under(cache / 'workers')}"
        time.sleep(0.1)


def test_a_worker_started_ahead_takes_the_next_job(monkeypatch):
    """Each evaluation starts its successor's worker, which imports torch while it waits: the
    next evaluation of that kind hands its job to it. A changed environment gets its own."""
    import arena.evaluation.processes as ev
    from arena.evaluation.parent import Candidate, evaluate
    from arena.taskdef.loader import load_task

    monkeypatch.setenv("ARENA_SPARE_WORKERS", "1")
    ev.SPARES.close()
    task = load_task(AXPY)
    cpu = detect("cpu")
    (v,) = evaluate(task, Candidate(task, None), ["smoke"], cpu)
    assert v.status.value == "PASSED", v.message
    key = ev._spare_key(cpu)
    (spare,) = ev.SPARES.idle[key]
    assert spare.proc.poll() is None
    (v,) = evaluate(task, Candidate(task, None), ["smoke"], cpu)
    assert v.status.value == "PASSED", v.message
    assert spare.proc.wait(timeout=60) == 0, "the worker started ahead ran the second job and ended"
    assert not spare.cwd.exists()
    (successor,) = ev.SPARES.idle[key]
    assert successor.proc.pid != spare.proc.pid
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "another test")
    assert ev._spare_key(cpu) == key  # handed over with the job
    monkeypatch.setenv("SOME_SETTING", "changed")
    assert ev._spare_key(cpu) != key  # not a worker started with another environment
    (v,) = evaluate(task, Candidate(task, None), ["smoke"], cpu)
    assert v.status.value == "PASSED", v.message
    # the idle worker of the environment no job runs in any more is given back
    assert successor.proc.wait(timeout=30) is not None and not successor.cwd.exists()
    assert list(ev.SPARES.idle) == [ev._spare_key(cpu)]
    assert ev.kill_live_workers() == 0
    assert ev.SPARES.idle == {}
    monkeypatch.setenv("ARENA_SPARE_WORKERS", "0")
    (v,) = evaluate(task, Candidate(task, None), ["smoke"], cpu)
    assert v.status.value == "PASSED" and ev.SPARES.idle.get(ev._spare_key(cpu), []) == []


def _links(pid: int) -> dict[int, str]:
    """What each descriptor above stderr of process ``pid`` refers to (``pipe:[inode]``, a path)."""
    out = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        if int(fd) > 2:
            try:
                out[int(fd)] = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                pass
    return out


def test_workers_are_forked_by_a_fork_server_and_keep_nothing_of_it(monkeypatch):
    """A worker's trusted process is forked from its kind's fork server (torch imported there
    once), in a session of its own, holding none of the server's descriptors (its socket, the
    other workers' status pipes); its exit status comes back through the server; a server that
    dies is replaced by the next worker's; ``ARENA_FORK_SERVER=0`` starts a worker afresh."""
    import arena.evaluation.processes as ev
    from arena.evaluation.parent import Candidate, evaluate
    from arena.taskdef.loader import load_task

    monkeypatch.setenv("ARENA_SPARE_WORKERS", "0")
    monkeypatch.delenv("ARENA_FORK_SERVER", raising=False)
    ev.SPARES.close()
    ev.FORK_SERVERS.close()
    cpu = detect("cpu")
    a, b = ev.spawn_worker(cpu), ev.spawn_worker(cpu)
    try:
        (server,) = ev.FORK_SERVERS.servers.values()
        held = set(_links(server.proc.pid).values())
        for w in (a, b):
            assert isinstance(w.proc, ev.Served)
            with open(f"/proc/{w.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            assert int(fields[1]) == server.proc.pid, "forked by the server"
            assert int(fields[2]) == int(fields[3]) == w.proc.pid, "its own session and group"
            mine = set(_links(w.proc.pid).values())
            assert mine and not mine & held, f"the worker holds the server's {mine & held}"
        a.discard()
        assert a.proc.returncode == -signal.SIGKILL, "its status, reaped by the server"
        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait()
        os.kill(b.proc.pid, 0)  # a worker outlives its server (killed by its group, as before)
    finally:
        a.discard()
        b.discard()
    task = load_task(AXPY)
    (v,) = evaluate(task, Candidate(task, None), ["smoke"], cpu)
    assert v.status.value == "PASSED", v.message
    (again,) = ev.FORK_SERVERS.servers.values()
    assert again.proc.pid != server.proc.pid and again.proc.poll() is None
    monkeypatch.setenv("ARENA_FORK_SERVER", "0")
    w = ev.spawn_worker(cpu)
    try:
        assert isinstance(w.proc, subprocess.Popen)
    finally:
        w.discard()
    (v,) = evaluate(task, Candidate(task, None), ["smoke"], cpu)
    assert v.status.value == "PASSED", v.message
    assert ev.FORK_SERVERS.close() == 1
