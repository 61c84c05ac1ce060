"""Every status the harness gives on the CPU backend, provoked by a deliberately broken
candidate (tests/fixtures/candidates*). GPU-only statuses of HIP candidates are
provoked by scripts/gpu_validate.sh on a GPU."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest

from arena.evaluation.parent import Candidate, evaluate
from arena.records import Status
from arena.taskdef.loader import load_task

FIX = Path(__file__).parent / "fixtures"
CANDS = FIX / "candidates"
HIP_CANDS = FIX / "candidates_hip"


@pytest.fixture(scope="module")
def scale():
    return load_task(FIX / "tasks" / "hip2hip" / "scale")


def _one(task, path, device, split="smoke"):
    verdicts = evaluate(task, Candidate(task, path, origin="test"), [split], device)
    assert len(verdicts) == 1
    return verdicts[0]


@pytest.mark.parametrize("name, status", [
    ("unwritten.py", Status.OUTPUT_UNWRITTEN),
    ("mutate.py", Status.INPUT_MUTATED),
    ("nan.py", Status.NAN_INF),
    ("wrong.py", Status.INCORRECT_NUMERICAL),
    ("reshape.py", Status.INCORRECT_SHAPE),
    ("raises.py", Status.RUNTIME_ERROR),
    ("overrun.py", Status.RUNTIME_ERROR),
    ("false_hint.py", Status.RUNTIME_ERROR),
    ("segfault.py", Status.CRASHED),
    ("missing_entry.py", Status.SIGNATURE_MISMATCH),
    ("wrong_arity.py", Status.SIGNATURE_MISMATCH),
    ("syntax_error.py", Status.COMPILE_ERROR),
    ("triton_compile_error.py", Status.COMPILE_ERROR),
    ("import_error.py", Status.LOAD_ERROR),
])
def test_broken_triton_candidate_gets_its_status(axpy, cpu, name, status):
    v = _one(axpy, CANDS / name, cpu)
    assert v.status is status, v.message
    assert v.message
    failing = [c for c in v.configs if c.status is not Status.PASSED]
    assert failing, "a failed verdict names the failing config"
    if name == "overrun.py":
        assert "past the end of 'out'" in v.message
    if name == "false_hint.py":
        assert "tl.multiple_of promises the compiler multiples of 16" in v.message, v.message


def test_a_call_reads_the_inputs_written_for_it_whatever_the_last_call_did_to_its_tensors(axpy, cpu):
    """A candidate that points its input tensor at a copy of its own before computing (as
    torch's cuDNN recurrent layers do to the weights they are handed) is right on every call:
    each call is given new tensor objects over the slot's buffers, so a copy made from the last
    call's inputs is not what the next one reads (it was INCORRECT_NUMERICAL, every element
    off, on the second set of inputs)."""
    v = _one(axpy, CANDS / "repoints_input.py", cpu)
    assert v.status is Status.PASSED, v.message
    assert len(v.seeds) >= 3


def test_hang_is_a_timeout_and_leaves_no_process(axpy, cpu):
    task = dataclasses.replace(axpy, timeouts={"correctness_s": 3.0})   # the kernel spins: a short limit
    v = _one(task, CANDS / "hang.py", cpu)
    assert v.status is Status.TIMEOUT
    assert "correctness" in v.message
    assert v.wall_s >= 3                  # ended by the stage's limit, not before it


def test_a_long_silence_is_said_while_it_lasts(axpy, cpu, monkeypatch):
    """While a hanging candidate runs out its stage's limit, the caller hears, every few seconds
    of silence, which stage of which config waits and how long until it is stopped."""
    import arena.evaluation.parent as ev

    monkeypatch.setattr(ev, "WAIT_NOTE_S", 1.0)
    task = dataclasses.replace(axpy, timeouts={"correctness_s": 4.0})
    heard: list[str] = []
    [v] = evaluate(task, Candidate(task, CANDS / "hang.py", origin="test"), ["smoke"], cpu, on_wait=heard.append)
    assert v.status is Status.TIMEOUT
    notes = [h for h in heard if h.startswith("correctness of smoke")]
    assert len(notes) >= 2, heard
    assert "nothing from the evaluation for" in notes[-1] and "s from now if nothing comes" in notes[-1]


def test_baseline_passes_and_reports_errors(axpy, cpu):
    v = _one(axpy, None, cpu)
    assert v.status is Status.PASSED
    assert all(c.status is Status.PASSED and c.max_abs_err is not None for c in v.configs)
    assert len(v.seeds) >= 3
    assert v.speedup is None  # no timing on the cpu backend


def test_wrong_value_reports_where(axpy, cpu):
    v = _one(axpy, CANDS / "wrong.py", cpu)
    c = v.configs[0]
    assert c.where and c.where["output"] == "out" and len(c.where["index"]) == 1
    assert c.max_abs_err > 0 and c.norm_err > 1e-5


def test_missing_kernel_file_is_a_load_error(axpy, cpu, tmp_path):
    v = _one(axpy, tmp_path / "nope.py", cpu)
    assert v.status is Status.LOAD_ERROR


def test_hip_compile_only_on_cpu_is_not_runnable(scale, cpu):
    v = _one(scale, None, cpu)
    assert v.status is Status.NOT_RUNNABLE
    assert not v.status.passed
    targets = {(b["target"], b["arch"]) for b in v.build["builds"]}
    assert ("cuda", "sm_90") in targets and ("rocm", "gfx90a") in targets


def test_hip_compiled_for_both_vendors_on_cpu_says_why_it_did_not_run(scale, cpu):
    from toolchains import need

    from arena.toolchain.hip import toolchain_available

    for target in ("cuda", "rocm"):
        need(toolchain_available(target))
    v = _one(scale, None, cpu)
    assert v.message == "compiled for sm_90 and gfx90a; not run: no GPU"


@pytest.mark.parametrize("name, status", [
    ("compile_error.hip", Status.COMPILE_ERROR),
    ("no_stream.hip", Status.SIGNATURE_MISMATCH),
    ("wrong_name.hip", Status.SIGNATURE_MISMATCH),
])
def test_broken_hip_candidate_gets_its_status(scale, cpu, name, status):
    v = _one(scale, HIP_CANDS / name, cpu)
    assert v.status is status, v.message
    if status is Status.COMPILE_ERROR:
        assert "not_declared" in v.message


def test_hip_compile_timeout(scale, cpu, tmp_path):
    src = tmp_path / "slow.hip"
    # a fresh source (no cache hit) and a compile limit no compiler meets
    src.write_text((scale.path / "baseline.hip").read_text() + f"\n// {os.urandom(8).hex()}\n")
    task = dataclasses.replace(scale, timeouts={"compile_s": 0.05})
    v = _one(task, src, cpu)
    assert v.status is Status.COMPILE_TIMEOUT


def test_broken_task_reference_is_a_task_error_not_the_candidates(axpy, cpu, tmp_path):
    folder = tmp_path / "triton2triton" / "axpy"
    shutil.copytree(axpy.path, folder)
    (folder / "reference.py").write_text("def reference(x, y, n, alpha):\n    raise RuntimeError('broken')\n")
    task = load_task(folder)
    v = _one(task, None, cpu)
    assert v.status is Status.TASK_ERROR
    assert v.status.kind == "infra"


def test_missing_compiler_on_cpu_skips_that_vendor_not_the_candidate(scale, cpu, monkeypatch):
    import arena.toolchain.hip as hip

    real = hip._find_compiler
    monkeypatch.setattr(hip, "_find_compiler", lambda target: None if target == "rocm" else real(target))
    v = _one(scale, None, cpu)
    assert v.status is Status.NOT_RUNNABLE
    assert v.message == "compiled for sm_90; not compiled for gfx90a: no hipcc; not run: no GPU"
    assert [b["target"] for b in v.build["builds"] if b["ok"]] == ["cuda"]


def test_no_compiler_on_cpu_says_so(scale, cpu, monkeypatch):
    from arena.toolchain import hip

    monkeypatch.setattr(hip, "_find_compiler", lambda target: None)
    v = _one(scale, None, cpu)
    assert v.status is Status.NOT_RUNNABLE and not v.status.scored
    assert v.message == "not compiled: no nvcc or hipcc; not run: no GPU"
    assert not any(b["ok"] for b in v.build["builds"])


def test_an_evaluation_that_runs_out_of_device_memory_before_the_candidate_loads_starts_again(axpy, cpu,
                                                                                               monkeypatch):
    """Another evaluation's candidate holding the GPU's memory past its allowance (until its own
    evaluation stops it) left a neighbour's candidate process no memory for its device context:
    HARNESS_ERROR on an H200, a verdict the neighbour did nothing to earn. Nothing of the candidate
    had run, so the evaluation starts again after a wait (at most ``STARVED_WAITS_S``); a shortage
    after the candidate was loaded, or a setup that fails otherwise, is not started again."""
    import arena.evaluation.parent as parent
    from arena.evaluation.protocol import FailureFrame, LoadedFrame

    starved = FailureFrame(status=Status.HARNESS_ERROR, message="the candidate process's setup failed: "
                           "AcceleratorError: CUDA error: out of memory")
    later = FailureFrame(status=Status.RUNTIME_ERROR, message="its own failure")
    runs: list[int] = []
    waits: list[float] = []
    script: list[list] = []

    def worker(*args, **kwargs):
        runs.append(1)
        frames = script.pop(0)
        return [(0.0, f) for f in frames], {"timed_out": None, "returncode": 0, "log_tail": "", "phases": {}}

    monkeypatch.setattr(parent, "_run_worker", worker)
    monkeypatch.setattr(parent.time, "sleep", waits.append)
    path = axpy.path / "baseline.py"

    script[:] = [[starved], [starved], [LoadedFrame(), later]]
    v = evaluate(axpy, Candidate(axpy, path, origin="test"), ["smoke"], cpu)[0]
    assert len(runs) == 3 and waits == list(parent.STARVED_WAITS_S[:2])
    assert v.status is Status.RUNTIME_ERROR and v.phases["starved_starts"] == 2

    runs.clear(), waits.clear()
    script[:] = [[starved]] * (len(parent.STARVED_WAITS_S) + 1)
    v = evaluate(axpy, Candidate(axpy, path, origin="test"), ["smoke"], cpu)[0]
    assert len(runs) == len(parent.STARVED_WAITS_S) + 1 and v.status is Status.HARNESS_ERROR   # not for ever

    for frames in ([LoadedFrame(), starved],            # out of memory with the candidate's code loaded
                   [FailureFrame(status=Status.HARNESS_ERROR, message="the candidate process's setup failed: "
                                                                       "no such file")]):
        runs.clear(), waits.clear()
        script[:] = [frames]
        evaluate(axpy, Candidate(axpy, path, origin="test"), ["smoke"], cpu)
        assert len(runs) == 1 and waits == []


def test_an_evaluation_the_parent_ends_says_where_its_trusted_process_was(axpy, cpu, tmp_path, monkeypatch):
    """A trusted process past its stage's limit with no word from it (here the task's reference
    never returns) is asked for its stacks before it is killed: the TIMEOUT names the innermost
    frames of its main thread."""
    import arena.evaluation.parent as ev

    monkeypatch.setattr(ev, "PARENT_GRACE_S", 1.0)
    folder = tmp_path / "triton2triton" / "axpy"
    shutil.copytree(axpy.path, folder)
    (folder / "reference.py").write_text(
        "import time\n\n\ndef reference(x, y, n, alpha):\n    time.sleep(600)\n    return alpha * x + y\n"
    )
    task = dataclasses.replace(load_task(folder), timeouts={"correctness_s": 3.0})
    v = _one(task, None, cpu)
    assert v.status is Status.TIMEOUT
    assert "no progress for the correctness time limit" in v.message
    assert "where its main thread was (innermost first): reference (reference.py:5) < " in v.message, v.message
    assert "expected (arena/evaluation/trusted/process.py:" in v.message
    assert "most recent call first" not in v.message, "the dump itself is summed up, not pasted"


def test_where_a_trusted_process_was_is_read_off_the_main_thread_of_its_dump():
    from arena.evaluation.decision import where_it_was

    log = (
        "some output of its own\n"
        "Thread 0x00007f37509fa6c0 (most recent call first):\n"
        '  File "/x/arena/evaluation/channel.py", line 118 in _read_exact\n'
        '  File "/usr/lib/python3.12/threading.py", line 1010 in run\n'
        "\n"
        "Current thread 0x00007f3a4c0bc140 (most recent call first):\n"
        '  File "/x/site-packages/torch/cuda/__init__.py", line 985 in synchronize\n'
        '  File "/x/arena/evaluation/trusted/process.py", line 180 in sync\n'
        '  File "/x/arena/evaluation/trusted/correctness.py", line 179 in _check_once\n'
        "\n"
    )
    where, rest = where_it_was(log)
    assert where == ("synchronize (__init__.py:985) < sync (arena/evaluation/trusted/process.py:180) < "
                     "_check_once (arena/evaluation/trusted/correctness.py:179)")
    assert rest == "some output of its own\n"
    assert where_it_was("no dump here\n") == ("", "no dump here\n")
