"""The trust boundary: the candidate's code runs in a process of its own.

- What candidate code changes in its process (torch's dispatcher, its flags, the environment,
  a runtime class) reaches neither the reference's result nor the baseline's time.
- The candidate's process holds nothing of the task beyond its own file: no module loaded
  from the task's reference or starting kernel, no reference function, no expected output.
- Candidate code runs only inside its own requests: a signal handler it installs does not run
  while its process waits for the next one.
- A fault of the candidate's process is the candidate's failure in every split.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from arena.evaluation.parent import Candidate, evaluate
from arena.records import Status
from arena.taskdef.loader import load_task

ROOT = Path(__file__).resolve().parents[1]
AXPY = ROOT / "tests" / "fixtures" / "tasks" / "triton2triton" / "axpy"
KERNEL = (AXPY / "baseline.py").read_text()


def test_the_dispatcher_and_flags_the_candidate_changes_do_not_reach_the_reference(cpu, tmp_path):
    """aten's mul and add made to return zeros, flags and the environment changed: had the
    reference run in the candidate's process, it would compute zeros and this correct kernel
    would fail."""
    path = tmp_path / "kernel.py"
    path.write_text(
        "import os\nimport torch\n"
        "_lib = torch._C._dispatch_library('IMPL', 'aten', '', 'kernel.py', 1)\n"
        "for _key in ('CPU', 'CUDA'):\n"
        "    _lib.impl('mul.Tensor', _key, lambda a, b: torch.zeros_like(a))\n"
        "    _lib.impl('add.Tensor', _key, lambda a, b, alpha=1: torch.zeros_like(a))\n"
        "torch.set_num_threads(1)\ntorch.set_flush_denormal(True)\n"
        "os.environ['OMP_NUM_THREADS'] = '1'\nos.environ['TORCHINDUCTOR_FORCE_DISABLE_CACHES'] = '1'\n" + KERNEL)
    assert "import torch" in path.read_text()
    task = load_task(AXPY)
    (v,) = evaluate(task, Candidate(task, path), ["smoke"], cpu)
    assert v.status is Status.PASSED, v.message
    assert all(c.max_abs_err is not None and c.max_abs_err < 1e-5 for c in v.configs)


def test_a_runtime_class_patched_by_the_candidate_leaves_the_baselines_time_alone(cpu, tmp_path):
    """The candidate patches the class that launches every Triton kernel so that each launch but
    its own sleeps 250 ms: in a shared process the baseline's time would grow by that much and
    the candidate would read several times faster. Timed on the host's clock (the cpu backend,
    where the baseline takes ~20 ms), it reads about as fast as the baseline it copies."""
    path = tmp_path / "kernel.py"
    path.write_text(KERNEL.replace("_axpy_kernel", "_axpy_copy") +
                    "\nimport time\nfrom triton.runtime.interpreter import InterpretedFunction\n"
                    "_run = InterpretedFunction.run\n"
                    "def _slow(self, *args, **kwargs):\n"
                    "    if 'axpy_copy' not in repr(self.fn):\n"
                    "        time.sleep(0.25)\n"
                    "    return _run(self, *args, **kwargs)\n"
                    "InterpretedFunction.run = _slow\n")
    task = load_task(AXPY)
    configs = {"smoke": task.configs("smoke")[:1]}
    (v,) = evaluate(task, Candidate(task, path), configs, cpu, timing=True,
                    timing_params={"host_clock": True, "min_pairs": 6, "max_pairs": 24, "cap_s": 3.0})
    assert v.status is Status.PASSED, v.message
    # the same kernel on both sides: ~1x (the sides are interleaved), though a machine busy with other
    # tests has read 1.72x once; the patch reaching the baseline would read >= 6x even with the call
    # twice as slow (250 ms added to a ~20-40 ms call)
    assert v.speedup is not None and v.speedup < 2.5, v.speedup


def test_candidate_code_runs_only_inside_the_candidates_own_requests(cpu, tmp_path):
    """A timer signal every millisecond, whose handler notes when it ran; the candidate answers
    wrong in any call after the handler ran well clear of its calls (more than 2 ms after the
    last one ended and before the next began). Between two calls the trusted process makes
    inputs, runs the reference and times the baseline in another process: a handler running
    there could launch work beside the baseline's timed calls. The candidate process blocks
    signals outside the candidate's code, so a handler runs only inside its own calls (or as
    one begins, with what was pending)."""
    path = tmp_path / "kernel.py"
    path.write_text(KERNEL.replace("def axpy(", "def _axpy(") +
                    "\nimport signal\nimport time\n"
                    "_ran, _last = [], [None]\n"
                    "signal.signal(signal.SIGALRM, lambda signum, frame: _ran.append(time.monotonic()))\n"
                    "signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)\n"
                    "def axpy(x, y, out, n, alpha):\n"
                    "    now = time.monotonic()\n"
                    "    between = _last[0] is not None and any(_last[0] + 0.002 < t < now - 0.002 for t in _ran)\n"
                    "    _ran.clear()\n"
                    "    _axpy(x, y, out, n, alpha + (1.0 if between else 0.0))\n"
                    "    _last[0] = time.monotonic()\n")
    task = load_task(AXPY)
    configs = {"smoke": task.configs("smoke")[:2]}
    (v,) = evaluate(task, Candidate(task, path), configs, cpu, timing=True,
                    timing_params={"host_clock": True, "min_pairs": 6, "max_pairs": 12, "cap_s": 2.0})
    assert v.status is Status.PASSED, v.message


PROBE = """
import gc, json, socket, struct, sys, types
from arena.evaluation.candidate.process import CandidateProcess
from arena.evaluation.protocol import CandidateSpec, LoadRequest, MapRequest, CallRequest, SetupRequest
from arena.evaluation.buffers import SlotMaker
import torch
from pathlib import Path

task_dir, kernel, scratch = sys.argv[1], sys.argv[2], Path(sys.argv[3])
ours, theirs = socket.socketpair()          # the control socket the buffers come on
proc = CandidateProcess(send=lambda f: None, notice_fd=None, mode="cpu", ctl=theirs)
spec = CandidateSpec(language="triton", path=kernel, entry="axpy", n_inputs=2, n_outputs=1,
                     scalar_types=["int64", "float32"])
replies = [proc.handle(SetupRequest(candidate=spec)), proc.handle(LoadRequest())]
slot = SlotMaker("cpu").allocate([(torch.float32, (1000,)), (torch.float32, (1000,)), (torch.float32, (1000,))])
socket.send_fds(ours, [struct.pack("q", 1)], [slot.fd])
replies += [proc.handle(MapRequest(slot=1, handle=slot.handle, scalars=[1000, 2.0])),
            proc.handle(CallRequest(slot=1))]
found = []
for name, mod in list(sys.modules.items()):
    f = getattr(mod, "__file__", None) or ""
    if f.startswith(task_dir) or name.startswith(("arena_reference", "arena_baseline")):
        found.append(f"module {name} ({f})")
for obj in gc.get_objects():
    if callable(obj) and getattr(obj, "__name__", "") == "reference":
        found.append(f"function reference in {getattr(obj, '__module__', '?')}")
    if isinstance(obj, types.FunctionType) and obj.__code__.co_filename.startswith(task_dir):
        found.append(f"code from {obj.__code__.co_filename}")
print(json.dumps({"replies": [type(r).__name__ for r in replies], "found": found}))
"""


def test_the_candidate_process_holds_nothing_of_the_task_but_its_own_file(tmp_path):
    """The candidate process's own code, driven through a candidate's whole life (setup, load,
    a mapped call), then searched: no module from the task's folder, no reference function,
    no code object from a task file. (The audit hook is left off here, so that the probe may
    search the heap; it ends a real candidate that tries.)"""
    kernel = tmp_path / "kernel.py"
    kernel.write_text(KERNEL)
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", PROBE, str(AXPY), str(kernel), str(tmp_path / "slots")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["replies"] == ["ReadyReply", "LoadedReply", "AckReply", "CalledReply"]
    assert result["found"] == [], result["found"]


def test_a_crash_is_the_candidates_failure_in_every_split(cpu):
    """The candidate's process dies (a segfault) in the first config: that config and every
    config not run yet, in this split and the next, are the candidate's failure (CRASHED), not a
    task or harness error; the trusted process reports them all."""
    task = load_task(AXPY)
    smoke = task.configs("smoke")
    (a, b) = evaluate(task, Candidate(task, ROOT / "tests" / "fixtures" / "candidates" / "segfault.py"),
                      {"smoke": smoke, "again": smoke}, cpu)
    for v in (a, b):
        assert v.status is Status.CRASHED, (v.split, v.status, v.message)
        assert all(c.status is Status.CRASHED for c in v.configs)
    assert "died" in a.configs[0].message
    assert "not run: the candidate process died" in b.configs[0].message


def test_a_write_past_a_slot_buffer_is_caught_by_its_guard_band(tmp_path):
    """The candidate's side (open_slot) maps the same bytes as the trusted side; a write one
    element past the first buffer, or before it, is named; writes inside the buffers are not."""
    import torch

    from arena.evaluation.buffers import SlotMaker, open_slot

    slot = SlotMaker("cpu").allocate([(torch.float32, (1000,)), (torch.int8, (7,))], ["x", "out"])
    (x, out), keep = open_slot(slot.handle, os.dup(slot.fd))
    x.fill_(3.0)
    out.fill_(1)
    assert slot.overrun() is None
    assert torch.equal(slot.tensors[0], x) and torch.equal(slot.tensors[1], out)
    torch.as_strided(x, (1001,), (1,))[1000] = 0.0
    assert slot.overrun() == "past the end of 'x'"
    again = SlotMaker("cpu").allocate([(torch.float32, (10,))], ["y"])
    (y,), keep2 = open_slot(again.handle, os.dup(again.fd))
    torch.as_strided(y, (1,), (1,), y.storage_offset() - 1).fill_(1.0)
    assert again.overrun() == "before the start of 'y'"
